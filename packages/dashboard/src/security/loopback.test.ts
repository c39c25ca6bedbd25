import { describe, expect, it } from 'vitest';
import { isLoopbackHost, loopbackRefusal } from './loopback.js';

const headers = (init: Record<string, string>) => new Headers(init);

describe('isLoopbackHost', () => {
  it('knows loopback names and addresses from others', () => {
    for (const host of ['127.0.0.1', '127.3.2.1', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.0.0.5', 'example.com', '128.0.0.1', 'localhost.example.com']) expect(isLoopbackHost(host), host).toBe(false);
  });
});

describe('loopbackRefusal', () => {
  it('lets a local browser in, whatever the port', () => {
    for (const host of ['127.0.0.1:4100', 'localhost:4100', 'LOCALHOST', '[::1]:4100', 'dash.localhost:8080']) {
      expect(loopbackRefusal('127.0.0.1', headers({ host })), host).toBeNull();
    }
    expect(loopbackRefusal('::ffff:127.0.0.1', headers({ host: '127.0.0.1:4100' }))).toBeNull();
  });

  it('refuses a remote peer', () => {
    expect(loopbackRefusal('10.0.0.7', headers({ host: '127.0.0.1:4100' }))).toBe('it answers loopback clients only');
    expect(loopbackRefusal(undefined, headers({ host: '127.0.0.1:4100' }))).toBe('it answers loopback clients only');
  });

  it('refuses what came through a proxy on this machine', () => {
    for (const name of ['x-forwarded-for', 'forwarded', 'x-real-ip', 'x-forwarded-host']) {
      expect(loopbackRefusal('127.0.0.1', headers({ host: '127.0.0.1:4100', [name]: '203.0.113.9' })), name).toMatch(/came through a proxy/);
    }
  });

  it('refuses a request for another host name (DNS rebinding)', () => {
    for (const host of ['evil.example:4100', 'evil.example', '127.0.0.1.evil.example', '']) {
      expect(loopbackRefusal('127.0.0.1', headers({ host })), host).toMatch(/answers requests for localhost or a loopback address only/);
    }
  });
});
