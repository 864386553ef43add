// The long fuzz run: the model-based suite of test/plants-api/fuzz-model.test.ts with 10 000
// commands per store and a random seed (npm test runs 600 with a fixed one).
// PLANTS_FUZZ_COMMANDS and PLANTS_FUZZ_SEED still override both; a failure
// prints the seed that replays it.
process.env.PLANTS_FUZZ_COMMANDS ??= '10000';
process.env.PLANTS_FUZZ_SEED ??= 'random';
await import('../plants-api/fuzz-model.test.js');
