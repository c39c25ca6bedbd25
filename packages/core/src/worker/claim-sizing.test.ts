import { describe, expect, it } from 'vitest';
import { AUTO_BATCH_MAX, AUTO_PREFETCH_MAX, ClaimSizing } from './claim-sizing.js';

const auto = (over: Partial<ConstructorParameters<typeof ClaimSizing>[0]> = {}) =>
  new ClaimSizing({ concurrency: 8, heartbeatIntervalMs: 20_000, prefetch: undefined, batch: undefined, maxPrefetch: AUTO_PREFETCH_MAX, ...over });
const idle = { running: 0, buffered: 0, writing: 0 };

describe('ClaimSizing, sized by the worker', () => {
  it('claims only for free slots until a handler has finished', () => {
    const s = auto();
    expect(s.prefetch).toBe(0);
    expect(s.want(idle)).toBe(8);
    expect(s.want({ running: 8, buffered: 0, writing: 0 })).toBe(0);
  });

  it('buffers what the slots start within the window: hundreds for microsecond handlers, none for slow ones', () => {
    const fast = auto();
    fast.observe(0.005);
    expect(fast.prefetch).toBe(AUTO_PREFETCH_MAX);
    expect(fast.want(idle)).toBe(AUTO_BATCH_MAX);
    const tens = auto();
    tens.observe(10);
    expect(tens.prefetch).toBe(80); // 8 slots × 100 ms / 10 ms
    const slow = auto();
    slow.observe(2_000);
    expect(slow.prefetch).toBe(0);
  });

  it('never buffers more than its slots start within half a heartbeat interval', () => {
    const s = auto({ heartbeatIntervalMs: 40 });
    s.observe(1);
    expect(s.prefetch).toBe(8 * 20); // window 20 ms, not 100
  });

  it('follows the handlers as they change (a moving average)', () => {
    const s = auto();
    s.observe(0.01);
    expect(s.prefetch).toBe(AUTO_PREFETCH_MAX);
    for (let i = 0; i < 100; i++) s.observe(1_000);
    expect(s.prefetch).toBe(0);
  });

  it('refills once the buffer is down to half, not for every freed slot, in powers of two', () => {
    const s = auto({ maxPrefetch: 512 });
    s.observe(0.005);
    expect(s.want({ running: 8, buffered: 300, writing: 0 })).toBe(0);
    expect(s.want({ running: 8, buffered: 256, writing: 0 })).toBe(256);
    expect(s.want({ running: 8, buffered: 400, writing: 0 })).toBe(0);
    expect(s.want({ running: 7, buffered: 0, writing: 0 })).toBe(512); // 513 room
    // 8 + 512 − 8 − 200 = 312 room: the largest power of two up to it
    expect(s.want({ running: 8, buffered: 200, writing: 0 })).toBe(256);
    expect(s.want({ running: 8, buffered: 250, writing: 200 })).toBe(256);
  });

  it('holds back while fenced writes lag by more than a full buffer', () => {
    const s = auto({ maxPrefetch: 512 });
    s.observe(0.005);
    expect(s.want({ running: 8, buffered: 0, writing: 520 })).toBe(512);
    expect(s.want({ running: 8, buffered: 0, writing: 900 })).toBe(128); // 520 − 380 lagging = 140 room
    expect(s.want({ running: 8, buffered: 0, writing: 1100 })).toBe(0);
  });
});

describe('ClaimSizing with the expert options', () => {
  it('prefetch 0 and no batch: claims exactly the free slots, like before', () => {
    const s = auto({ prefetch: 0, batch: 8 });
    s.observe(0.005);
    expect(s.want(idle)).toBe(8);
    expect(s.want({ running: 5, buffered: 0, writing: 0 })).toBe(3);
    expect(s.want({ running: 8, buffered: 0, writing: 0 })).toBe(0);
  });

  it('keeps the given prefetch and batch whatever the handlers take', () => {
    const s = auto({ prefetch: 492, batch: 250 });
    s.observe(5_000);
    expect(s.prefetch).toBe(492);
    expect(s.want(idle)).toBe(250);
    expect(s.want({ running: 8, buffered: 246, writing: 0 })).toBe(246);
    expect(s.want({ running: 8, buffered: 247, writing: 0 })).toBe(0);
  });
});
