import { printParseErrorCode, visit, type ParseErrorCode } from 'jsonc-parser';
import { parse as parseToml, TomlError } from 'smol-toml';
import { nearest } from './nearest.js';
import { ConfigError } from './schema.js';
import { ALL_SETTINGS, SETTINGS } from './settings.js';

/** A configuration file (--config FILE), parsed: setting names (as the flags, without --) to values. */
export interface ConfigFile {
  path: string;
  values: Readonly<Record<string, unknown>>;
}

const JSON_OPTIONS = { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false };

/** "line 3, column 7", from zero-based numbers. */
const at = (line: number, column: number) => `line ${line + 1}, column ${column + 1}`;

/** "comma expected", from jsonc-parser's CommaExpected. */
const jsonProblem = (code: ParseErrorCode) =>
  printParseErrorCode(code)
    .replace(/(?<=[a-z])([A-Z])/g, ' $1')
    .toLowerCase();

/**
 * Strict JSON. jsonc-parser reads it first, so that an error has its line and
 * column (and not, as JSON.parse's messages may, the start of the text) and a
 * key given twice in one object is refused rather than the last one winning;
 * then JSON.parse builds the value.
 */
function parseJson(path: string, text: string): unknown {
  let problem: string | undefined;
  const objects: (Set<string> | undefined)[] = [];
  visit(
    text,
    {
      onObjectBegin: () => void objects.push(new Set()),
      onObjectEnd: () => void objects.pop(),
      onArrayBegin: () => void objects.push(undefined),
      onArrayEnd: () => void objects.pop(),
      onObjectProperty: (name, _offset, _length, line, column) => {
        const keys = objects.at(-1);
        if (keys?.has(name)) problem ??= `"${name.slice(0, 100)}" is given twice (${at(line, column)})`;
        keys?.add(name);
      },
      onError: (code, _offset, _length, line, column) => {
        problem ??= `${jsonProblem(code)} at ${at(line, column)}`;
      },
    },
    JSON_OPTIONS,
  );
  if (problem === undefined) {
    try {
      return JSON.parse(text);
    } catch {
      problem = 'not a JSON document';
    }
  }
  throw new ConfigError(`${path} is not valid JSON: ${problem}`);
}

/** TOML, whose errors have their line and column; smol-toml's message, without the lines of the file it quotes. */
function parseTomlFile(path: string, text: string): unknown {
  try {
    return parseToml(text);
  } catch (error) {
    if (!(error instanceof TomlError)) throw new ConfigError(`${path} is not valid TOML`);
    const problem = error.message.split('\n')[0]!.replace(/^Invalid TOML document: /, '');
    throw new ConfigError(`${path} is not valid TOML: ${problem} at ${at(error.line - 1, error.column - 1)}`);
  }
}

/**
 * Reads a configuration file: JSON (.json) or TOML (.toml), one top-level key
 * per setting, named as its flag without the dashes in front. Keys that name
 * no setting are refused, with the nearest name when there is one; so are
 * names an object inherits (constructor, __proto__), and a key given twice.
 * A parse error names its line and column and never repeats the text.
 */
export function parseConfigFile(path: string, text: string): ConfigFile {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  let values: unknown;
  if (/\.json$/i.test(path)) values = parseJson(path, body);
  else if (/\.toml$/i.test(path)) values = parseTomlFile(path, body);
  else throw new ConfigError(`${path}: a configuration file must end in .json or .toml`);
  if (typeof values !== 'object' || values === null || Array.isArray(values))
    throw new ConfigError(`${path} must hold an object of settings, such as { "port": 8080 }`);
  for (const key of Object.keys(values)) {
    if (!Object.hasOwn(SETTINGS, key)) {
      const guess = nearest(key.replace(/^--/, ''), ALL_SETTINGS);
      throw new ConfigError(`${path}: unknown setting "${key}"${guess ? ` (did you mean "${guess}"?)` : ''}`);
    }
  }
  return { path, values: values as Record<string, unknown> };
}
