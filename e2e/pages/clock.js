// The page clock placed on the system clock, shared by the witness pages (harness.js's
// paint runs, net.js, audio.js).

// The page clock (performance.timeOrigin + performance.now()) minus the system clock
// (Date.now(), which the browser process and the sound server's recorder also read),
// read at the instant Date.now() steps to its next millisecond: there the system clock
// is a whole millisecond to within one loop turn, so the difference is the offset itself,
// not the offset plus how far into its millisecond Date.now() was. The smallest of
// `tries` (a read that comes late only adds).
export function skewAtStep(tries = 5) {
  let best = Infinity;
  for (let i = 0; i < tries; i++) {
    const before = Date.now();
    let now;
    while ((now = Date.now()) === before) { /* wait for the step */ }
    best = Math.min(best, performance.timeOrigin + performance.now() - now);
  }
  return best;
}
