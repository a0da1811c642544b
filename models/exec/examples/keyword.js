#!/usr/bin/env node
// keyword.js: a stress-exec/1 backend in Node with no dependencies. It is a
// deterministic keyword model: it reads the last message a model is shown
// and picks a recovery policy from the first rule whose keyword it holds.
// With options.think on (true, "low", "medium" or "high") it also returns
// its reasoning as thinking, which stress stores apart from the answer.
//
//   stress-exec/1: one JSON request per line on stdin, one JSON reply per
//   line on stdout, matched by id; exit when stdin ends. See
//   models/README.md ("The exec backend").
'use strict';

const readline = require('node:readline');

const rules = [
  ['select_tool', ['unknown tool', 'tool not found', 'no such tool', 'not found', 'does not exist']],
  ['authenticate', ['401', '403', 'unauthorized', 'forbidden', 'token', 'credential', 'permission']],
  ['retry_later', ['429', 'rate limit', 'too many requests', 'quota']],
  ['retry_now', ['timed out', 'timeout', '503', 'temporarily unavailable']],
  ['revise_arguments', ['invalid', 'required', 'missing', 'must be', 'expected', 'schema']],
];

function decide(text) {
  const t = text.toLowerCase();
  for (const [policy, words] of rules) {
    for (const w of words) {
      if (t.includes(w)) return { policy, why: `the failure says "${w}"` };
    }
  }
  return { policy: 'stop_or_escalate', why: 'no rule matched' };
}

function reply(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  if (line.trim() === '') return;
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    process.stderr.write(`keyword.js: not JSON: ${e.message}\n`);
    process.exit(2);
  }
  if (req.protocol !== 'stress-exec/1') {
    reply({ id: req.id, error: `keyword.js speaks stress-exec/1, got ${req.protocol}` });
    return;
  }
  if (req.type === 'hello') {
    reply({ id: req.id, meta: { name: 'keyword.js', version: '1', node: process.version } });
    return;
  }
  const msgs = req.messages || [];
  const last = msgs.length ? msgs[msgs.length - 1].content : '';
  const { policy, why } = decide(last);
  const think = req.options && req.options.think;
  const out = {
    id: req.id,
    text: JSON.stringify({ operation_status: 'failed', recovery_policy: policy }),
    prompt_tokens: msgs.reduce((n, m) => n + m.content.split(/\s+/).filter(Boolean).length, 0),
    output_tokens: 2,
    meta: { rule: policy },
  };
  if (think === true || think === 'low' || think === 'medium' || think === 'high') {
    out.thinking = `The call failed and ${why}, so the policy is ${policy}.`;
  }
  reply(out);
});
rl.on('close', () => process.exit(0));
