import { describe, expect, it } from 'vitest';
import type { RouteAnswer } from '../src/lib/api';
import {
  describeAnswer,
  describeFallbacks,
  fieldOf,
  keyboardMove,
  latestDebounced,
  moveAnnouncement,
  moveRow,
  newRow,
  problemAt,
  problemPlace,
  routesFrom,
  rowsFrom,
  routesKey,
  splitList,
} from '../src/lib/route-editor';

describe('the draft', () => {
  it('round-trips routes, leaving out what a row does not set', () => {
    const routes = [
      { match: 'claude-haiku-*', provider: 'cheap', model: 'm-small', fallbacks: ['big/m-large', 'ant'], max_attempts: 3 },
      { match: 'fast', provider: 'cheap' },
    ];
    const rows = rowsFrom(routes);
    expect(rows[0].fallbacks).toBe('big/m-large, ant');
    expect(rows[0].id).not.toBe(rows[1].id);
    expect(routesFrom(rows)).toEqual({ routes, problems: [] });
  });

  it('is told from the saved routes whatever order the gateway lists their fields in', () => {
    const rows = rowsFrom([{ match: 'fast', provider: 'cheap', model: 'm-small' }]);
    const asSaved = [{ match: 'fast', model: 'm-small', provider: 'cheap' }];
    expect(routesKey(routesFrom(rows).routes)).toBe(routesKey(asSaved));
    expect(routesKey(routesFrom(rows).routes)).not.toBe(routesKey([{ match: 'fast', provider: 'cheap' }]));
    expect(routesKey([{ match: 'a', provider: 'p', fallbacks: [] }])).toBe(routesKey([{ match: 'a', provider: 'p' }]));
  });

  it('trims what was typed, and splits fallbacks on commas and spaces', () => {
    const row = { ...newRow('cheap'), match: ' claude-* ', model: '  ', fallbacks: 'a/x,b/y  c ,', maxAttempts: ' 2 ' };
    expect(routesFrom([row]).routes).toEqual([{ match: 'claude-*', provider: 'cheap', fallbacks: ['a/x', 'b/y', 'c'], max_attempts: 2 }]);
    expect(splitList(' , ')).toEqual([]);
  });

  it('catches an attempt count no JSON would carry, at the path the gateway uses', () => {
    const rows = [newRow('a'), { ...newRow('a'), maxAttempts: '1.5' }, { ...newRow('a'), maxAttempts: '-1' }];
    expect(routesFrom(rows).problems.map((p) => p.path)).toEqual(['routes[1].max_attempts', 'routes[2].max_attempts']);
    // 0 is a number: the gateway's own validation says why it is refused.
    expect(routesFrom([{ ...newRow('a'), maxAttempts: '0' }])).toMatchObject({ routes: [{ max_attempts: 0 }], problems: [] });
  });
});

describe('moves', () => {
  const rows = ['a', 'b', 'c', 'd'];

  it('put a row where it is dropped, clamped to the list', () => {
    expect(moveRow(rows, 3, 0)).toEqual(['d', 'a', 'b', 'c']);
    expect(moveRow(rows, 0, 2)).toEqual(['b', 'c', 'a', 'd']);
    expect(moveRow(rows, 1, 99)).toEqual(['a', 'c', 'd', 'b']);
    expect(moveRow(rows, 0, -1)).toBe(rows);
    expect(moveRow(rows, 7, 0)).toBe(rows);
    expect(rows).toEqual(['a', 'b', 'c', 'd']);
  });

  it('come from Alt+ArrowUp and Alt+ArrowDown only', () => {
    expect(keyboardMove({ key: 'ArrowUp', altKey: true })).toBe(-1);
    expect(keyboardMove({ key: 'ArrowDown', altKey: true })).toBe(1);
    expect(keyboardMove({ key: 'ArrowDown', altKey: false })).toBeNull();
    expect(keyboardMove({ key: 'ArrowDown', altKey: true, shiftKey: true })).toBeNull();
    expect(keyboardMove({ key: 'Enter', altKey: true })).toBeNull();
  });

  it('are announced by the route’s match and its new position', () => {
    expect(moveAnnouncement({ ...newRow(), match: 'claude-*' }, 0, 3)).toBe('Moved claude-* to position 1 of 3.');
    expect(moveAnnouncement(newRow(), 2, 3)).toBe('Moved the new route to position 3 of 3.');
  });
});

describe('problems', () => {
  const problems = [
    { path: 'routes[1].match', message: '"claude-[" is not a valid glob: unclosed character class' },
    { path: 'routes[0].fallbacks[1]', message: 'no provider named "x" is configured' },
    { path: 'routes[0].fallbacks[2]', message: 'a cycle' },
    { path: 'providers.a.base_url', message: 'bad' },
  ];

  it('show by the field their path names', () => {
    expect(fieldOf('routes[12].max_attempts')).toEqual({ row: 12, field: 'max_attempts' });
    expect(fieldOf('routes[3]')).toEqual({ row: 3, field: null });
    expect(fieldOf('providers.a.base_url')).toBeNull();
    expect(problemAt(problems, 1, 'match')).toMatch(/not a valid glob/);
    expect(problemAt(problems, 0, 'match')).toBeUndefined();
    expect(problemAt(problems, 0, 'fallbacks')).toBe('no provider named "x" is configured; a cycle');
  });

  it('name their place in the summary', () => {
    expect(problemPlace('routes[1].match')).toBe('Route 2, match');
    expect(problemPlace('routes[0].max_attempts')).toBe('Route 1, max attempts');
    expect(problemPlace('providers.a.base_url')).toBe('providers.a.base_url');
    expect(problemPlace('')).toBe('the config');
  });
});

describe('the answer', () => {
  const base: RouteAnswer = { model: 'claude-haiku-4-5', via: 'route', route: 0, pattern: 'claude-haiku-*', provider: 'cheap', upstream_model: 'm-small', state: 'up', cooling_down: false, fallbacks: [], max_attempts: 3, error: null };

  it('reads as the rule, the provider and the model sent', () => {
    expect(describeAnswer(base)).toBe('Route 1 (claude-haiku-*) → cheap as m-small');
    expect(describeAnswer({ ...base, via: 'provider_family', route: null, pattern: 'claude-*', provider: 'ant', upstream_model: 'claude-haiku-4-5' })).toBe(
      "No route of the list matches: ant's own models (claude-*) → ant",
    );
    expect(describeAnswer({ ...base, via: 'provider_model', model: 'cheap/m-x', upstream_model: 'm-x' })).toBe('The provider/model name → cheap as m-x');
    expect(describeAnswer({ ...base, via: 'default', upstream_model: 'claude-haiku-4-5' })).toBe('No route matches: the default provider → cheap');
  });

  it('says what a client would be told when nothing serves the model', () => {
    const none: RouteAnswer = { model: 'llama3', via: 'none', error: { status: 404, type: 'unknown_model', message: 'model "llama3" is not served by this gateway' } };
    expect(describeAnswer(none)).toBe('No route: a client gets 404 — model "llama3" is not served by this gateway');
  });

  it('lists the fallbacks in order, naming one cooling down', () => {
    expect(describeFallbacks(base)).toBe('');
    const a = { ...base, fallbacks: [{ provider: 'big', model: 'm-large', state: 'cooling_down' as const, retry_in_secs: 30 }, { provider: 'ant', model: 'claude-haiku-4-5', state: 'up' as const, retry_in_secs: null }] };
    expect(describeFallbacks(a)).toBe('If it fails before answering: big as m-large (cooling down), then ant as claude-haiku-4-5.');
  });
});

describe('the live check', () => {
  /** Timers run by hand, so the test says when time passes. */
  function manualTimers() {
    let queue: { f: () => void; id: number }[] = [];
    let id = 0;
    return {
      set: (f: () => void) => {
        queue.push({ f, id: ++id });
        return id;
      },
      clear: (t: unknown) => {
        queue = queue.filter((q) => q.id !== t);
      },
      fire() {
        const now = queue;
        queue = [];
        now.forEach((q) => q.f());
      },
      get waiting() {
        return queue.length;
      },
    };
  }

  it('runs once typing stops, with the last input', async () => {
    const timers = manualTimers();
    const ran: string[] = [];
    const applied: string[] = [];
    const check = latestDebounced(
      async (s: string) => {
        ran.push(s);
        return s.toUpperCase();
      },
      (r) => applied.push(String(r)),
      250,
      timers,
    );
    check.schedule('c');
    check.schedule('cl');
    check.schedule('cla');
    expect(timers.waiting).toBe(1);
    expect(check.pending()).toBe(true);
    timers.fire();
    await Promise.resolve();
    await Promise.resolve();
    expect(ran).toEqual(['cla']);
    expect(applied).toEqual(['CLA']);
    expect(check.pending()).toBe(false);
  });

  it('drops an answer that comes back after a newer call was made', async () => {
    const timers = manualTimers();
    const resolvers: ((v: string) => void)[] = [];
    const applied: string[] = [];
    const check = latestDebounced(
      (s: string) => new Promise<string>((resolve) => resolvers.push(() => resolve(s))),
      (r) => applied.push(String(r)),
      250,
      timers,
    );
    check.schedule('old');
    timers.fire();
    check.schedule('new');
    timers.fire();
    resolvers[1]('');
    await Promise.resolve();
    resolvers[0]('');
    await Promise.resolve();
    await Promise.resolve();
    expect(applied).toEqual(['new']);
  });

  it('hands an error over as an Error, and cancel drops what was scheduled', async () => {
    const timers = manualTimers();
    const applied: unknown[] = [];
    const check = latestDebounced(
      (s: string) => (s === 'bad' ? Promise.reject(new Error('refused')) : Promise.resolve(s)),
      (r) => applied.push(r),
      250,
      timers,
    );
    check.schedule('bad');
    timers.fire();
    await Promise.resolve();
    await Promise.resolve();
    expect(applied[0]).toBeInstanceOf(Error);
    check.schedule('later');
    check.cancel();
    expect(timers.waiting).toBe(0);
  });
});
