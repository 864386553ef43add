// A grouped bar chart as a hand-written SVG string: req/s, p99 latency and
// server CPU per request for each scenario, baseline next to service. No charting dependency, so the file
// renders anywhere (GitHub, a browser) exactly as written.
import type { ScenarioResult } from './results.js';

interface Series {
  name: string;
  color: string;
}

interface Group {
  label: string;
  values: number[];
}

const SERIES: Series[] = [
  { name: 'baseline (in-memory Fastify)', color: '#9aa5b1' },
  { name: 'service', color: '#2f855a' },
];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A round axis maximum at or above `max`: 1, 2 or 5 times a power of ten. */
function niceMax(max: number): number {
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

function short(n: number): string {
  if (n === 0) return '0';
  if (n >= 10_000) return `${(n / 1000).toFixed(0)}k`;
  if (n >= 1000) return `${(n / 1000).toFixed(1)}k`;
  if (n >= 10) return n.toFixed(0);
  return String(Number(n.toFixed(2)));
}

function panel(title: string, groups: Group[], x0: number, y0: number, width: number, height: number): string {
  const left = 56;
  const top = 28;
  const bottom = 44;
  const plotW = width - left - 12;
  const plotH = height - top - bottom;
  const max = niceMax(Math.max(0, ...groups.flatMap((g) => g.values)));
  const out: string[] = [`<g transform="translate(${x0},${y0})">`];
  out.push(`<text x="${left}" y="16" font-size="14" font-weight="bold">${esc(title)}</text>`);
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    const y = top + plotH - (plotH * i) / 4;
    out.push(`<line x1="${left}" x2="${left + plotW}" y1="${y}" y2="${y}" stroke="#e2e8f0"/>`);
    out.push(`<text x="${left - 6}" y="${y + 4}" font-size="11" text-anchor="end" fill="#4a5568">${short(v)}</text>`);
  }
  const groupW = plotW / Math.max(groups.length, 1);
  const barW = Math.min(36, (groupW * 0.7) / SERIES.length);
  groups.forEach((g, gi) => {
    const gx = left + gi * groupW + (groupW - barW * SERIES.length) / 2;
    g.values.forEach((v, si) => {
      const h = (plotH * v) / max;
      const x = gx + si * barW;
      const y = top + plotH - h;
      out.push(
        `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${SERIES[si]!.color}"><title>${esc(`${g.label} ${SERIES[si]!.name}: ${v}`)}</title></rect>`,
      );
      out.push(
        `<text x="${(x + barW / 2 - 1).toFixed(1)}" y="${(y - 3).toFixed(1)}" font-size="10" text-anchor="middle" fill="#2d3748">${short(v)}</text>`,
      );
    });
    out.push(
      `<text x="${(left + gi * groupW + groupW / 2).toFixed(1)}" y="${top + plotH + 16}" font-size="11" text-anchor="middle">${esc(g.label)}</text>`,
    );
  });
  out.push(`<line x1="${left}" x2="${left + plotW}" y1="${top + plotH}" y2="${top + plotH}" stroke="#4a5568"/>`);
  out.push('</g>');
  return out.join('\n');
}

export function renderChart(results: readonly ScenarioResult[], subtitle: string): string {
  const multiBackend = new Set(results.map((r) => r.backend)).size > 1;
  const label = (r: ScenarioResult) =>
    multiBackend ? `${r.backend === 'postgres' ? 'pg' : 'sqlite'}:${r.scenario}` : r.scenario;
  const rps = results.map((r) => ({ label: label(r), values: [r.baseline.load.rps, r.service.load.rps] }));
  const p99 = results.map((r) => ({ label: label(r), values: [r.baseline.load.p99Ms, r.service.load.p99Ms] }));
  const cpu = results.map((r) => ({
    label: label(r),
    values: [r.baseline.cpu.serverUsPerRequest, r.service.cpu.serverUsPerRequest],
  }));
  const width = Math.max(640, 120 + results.length * 110);
  const panelH = 260;
  const height = 60 + panelH * 3 + 30;
  const legend = SERIES.map(
    (s, i) =>
      `<rect x="${56 + i * 240}" y="${height - 22}" width="12" height="12" fill="${s.color}"/><text x="${74 + i * 240}" y="${height - 12}" font-size="12">${esc(s.name)}</text>`,
  ).join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, sans-serif">
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="16" y="24" font-size="16" font-weight="bold">Plant Store: service vs baseline</text>
<text x="16" y="44" font-size="12" fill="#4a5568">${esc(`${[...new Set(results.map((r) => r.backend))].join(' + ')}; ${subtitle}`)}</text>
${panel('Requests per second (higher is better)', rps, 0, 56, width, panelH)}
${panel('p99 latency in ms (lower is better)', p99, 0, 56 + panelH, width, panelH)}
${panel('Server CPU µs per request (lower is better; least affected by other load)', cpu, 0, 56 + panelH * 2, width, panelH)}
${legend}
</svg>
`;
}
