// oi-tui kernel driver for Node.js.
//
// Reads one command a line from the control FIFO named by argv[2]: "BLOCK NONCE PATH".
// Runs the code in PATH as a script in this one global context, so that globals and
// top-level declarations persist, awaits a promise it ends with, then writes the end marker
// ESC ] 5379 ; NONCE ; BLOCK ; STATUS BEL to the terminal. Code never passes through stdin.
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');
const util = require('util');
const readline = require('readline');
const { createRequire } = require('module');

const fifo = process.argv[2];
process.argv = [process.argv[0]];

let markerFd = 1;
try {
  markerFd = fs.openSync('/dev/tty', 'w');
} catch (_) {
  markerFd = 1;
}

// Behave like the REPL: require() resolves from the working directory.
globalThis.require = createRequire(path.join(process.cwd(), '[oi-tui block]'));
globalThis.module = { exports: {} };
globalThis.exports = globalThis.module.exports;
globalThis.__filename = path.join(process.cwd(), '[oi-tui block]');
globalThis.__dirname = process.cwd();

// The block that runs now: { block, nonce, done, interrupt }.
let current = null;

// A block that closed standard output or error (fs.closeSync(1), process.stdout.destroy())
// would leave every later block mute: the descriptors are opened again on the terminal (an
// open takes the lowest free one), and a stream that can no longer write is replaced.
function repairStdio() {
  for (const [fd, flags] of [[0, 'r'], [1, 'w'], [2, 'w']]) {
    try {
      fs.fstatSync(fd);
    } catch (_) {
      try {
        const got = fs.openSync('/dev/tty', flags);
        if (got !== fd) fs.closeSync(got);
      } catch (_) {
        // Left as it is: oi-tui restarts a kernel whose streams are gone.
      }
    }
  }
  let replaced = false;
  for (const [name, fd] of [['stdout', 1], ['stderr', 2]]) {
    const stream = process[name];
    if (stream && !stream.destroyed && !stream.writableEnded) continue;
    try {
      const tty = require('tty');
      const fresh = tty.isatty(fd) ? new tty.WriteStream(fd) : fs.createWriteStream(null, { fd, autoClose: false });
      Object.defineProperty(process, name, { configurable: true, enumerable: true, get: () => fresh });
      replaced = true;
    } catch (_) {
      // As above.
    }
  }
  if (replaced) {
    globalThis.console = new console.Console({ stdout: process.stdout, stderr: process.stderr });
  }
}

function writeMarker(run, status) {
  if (run.done) return;
  run.done = true;
  if (current === run) current = null;
  repairStdio();
  try {
    fs.fstatSync(markerFd);
  } catch (_) {
    try {
      markerFd = fs.openSync('/dev/tty', 'w');
    } catch (_) {
      markerFd = 1;
    }
  }
  fs.writeSync(markerFd, `\x1b]5379;${run.nonce};${run.block};${status}\x07`);
}

function report(err) {
  if (err && err.stack) {
    // Keep the block's frames and the libraries'; drop the driver's and what called it.
    const lines = String(err.stack).split('\n');
    const end = lines.findIndex((l) => /\(node:vm:|sigintHandlersWrap|runInThisContext/.test(l));
    const kept = (end < 0 ? lines : lines.slice(0, end)).filter((l) => !l.includes(__filename));
    process.stderr.write(kept.join('\n') + '\n');
  } else {
    process.stderr.write(`Uncaught ${util.inspect(err)}\n`);
  }
}

process.on('SIGINT', () => {
  if (current) {
    process.stderr.write('\nInterrupted\n');
    current.interrupt();
  }
});

process.on('uncaughtException', (err) => {
  report(err);
  if (current) writeMarker(current, 1);
});
process.on('unhandledRejection', (err) => {
  report(err);
  if (current) writeMarker(current, 1);
});

function compile(source, filename) {
  try {
    return new vm.Script(source, { filename });
  } catch (err) {
    // Top-level await: run the block as the body of an async function.
    if (err instanceof SyntaxError && /await is only valid/.test(err.message)) {
      return new vm.Script(`(async () => {\n${source}\n})()`, { filename, lineOffset: -1 });
    }
    throw err;
  }
}

async function runBlock(block, nonce, file) {
  const run = { block, nonce, done: false };
  const interrupted = new Promise((resolve) => {
    run.interrupt = () => resolve('interrupted');
  });
  current = run;
  let status = 0;
  try {
    const source = fs.readFileSync(file, 'utf8');
    const script = compile(source, `<block ${block}>`);
    let value = script.runInThisContext({ breakOnSigint: true, displayErrors: false });
    if (value && typeof value.then === 'function') {
      const settled = await Promise.race([value.then(() => 'done'), interrupted]);
      if (settled === 'interrupted') status = 130;
    }
  } catch (err) {
    if (err && err.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED') {
      process.stderr.write('\nInterrupted\n');
      status = 130;
    } else {
      report(err);
      status = 1;
    }
  }
  writeMarker(run, status);
}

const control = readline.createInterface({ input: fs.createReadStream(fifo), crlfDelay: Infinity });
const queue = [];
let busy = false;

async function pump() {
  if (busy) return;
  busy = true;
  while (queue.length > 0) {
    const line = queue.shift();
    const [block, nonce, ...rest] = line.split(' ');
    await runBlock(block, nonce, rest.join(' '));
  }
  busy = false;
}

control.on('line', (line) => {
  if (line.trim() === '') return;
  queue.push(line);
  pump();
});
control.on('close', () => process.exit(0));
