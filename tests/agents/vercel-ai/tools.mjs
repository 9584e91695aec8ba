// The agent's tools: real functions on the working directory.
//   read_file {path}     the file's text; throws when it cannot be read (the SDK records the error)
//   run_command {command} runs `bash -c command` and returns {exit_code, stdout, stderr}; a non-zero
//                         exit is a result, not an error, as in the coding-agent CLIs
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { tool } from 'ai';
import { z } from 'zod';

function runBash(command, cwd) {
  return new Promise((done) => {
    execFile('/bin/bash', ['-c', command], { cwd, timeout: 30000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      const exitCode = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      done({ exit_code: exitCode, stdout, stderr });
    });
  });
}

export function makeTools(workdir) {
  return {
    read_file: tool({
      description: 'Read a text file of the workspace.',
      inputSchema: z.object({ path: z.string().describe('path relative to the workspace') }),
      execute: async ({ path }) => readFile(resolve(workdir, path), 'utf8'),
    }),
    run_command: tool({
      description: 'Run a shell command in the workspace.',
      inputSchema: z.object({ command: z.string().describe('a bash command line') }),
      execute: async ({ command }) => runBash(command, workdir),
    }),
  };
}
