// The reference's health-check and builder counters: the reasons a failed build counts under,
// read from the builder's errors (the reference's words), all exported at 0 before any build.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { buildFailureReason, registerEngineCounters } from '../../../cmd/engine-metrics.ts';

test('buildFailureReason: each builder error under the reference reason', () => {
  assert.equal(buildFailureReason(new Error('dockerfile parse error on line 2: unknown instruction: FROB'), false), 'unknown_instruction_error');
  assert.equal(buildFailureReason(new Error('file with no instructions'), false), 'dockerfile_empty_error');
  assert.equal(buildFailureReason(new Error('dockerfile parse error on line 1: FROM requires either one or three arguments'), false), 'dockerfile_syntax_error');
  assert.equal(buildFailureReason(new Error('failed to reach build target x in Dockerfile'), false), 'build_target_not_reachable_error');
  assert.equal(buildFailureReason(new Error('The command \'/bin/sh -c false\' returned a non-zero code: 1'), false), 'error_processing_commands_error');
  assert.equal(buildFailureReason(new Error('anything'), true), 'build_canceled');
});

test('registerEngineCounters: every reason at 0 first; checks, failed checks and builds count', async () => {
  const registry = new Registry();
  const c = registerEngineCounters(registry);
  let text = await registry.metrics();
  assert.match(text, /^builder_builds_failed_total\{reason="build_canceled"\} 0$/m);
  assert.match(text, /^engine_daemon_health_checks_total 0$/m);
  c.healthCheck(false);
  c.healthCheck(true);
  c.buildTriggered();
  c.buildFailed(new Error('file with no instructions'), false);
  text = await registry.metrics();
  assert.match(text, /^engine_daemon_health_checks_total 2$/m);
  assert.match(text, /^engine_daemon_health_checks_failed_total 1$/m);
  assert.match(text, /^builder_builds_triggered_total 1$/m);
  assert.match(text, /^builder_builds_failed_total\{reason="dockerfile_empty_error"\} 1$/m);
});
