// The probe's clock: the page's performance.now(), and how fine it is.

export const now = () => performance.now();

// The smallest step of performance.now(), by watching it change, once per page. Every
// gap between two distinct readings is a whole number of steps, so the smallest is the
// estimate; the question is when to stop spinning. A gap counts once another agrees with
// it within 10 % (a smaller one starts the count again). It stops after 8 changes (a
// fine clock: well under 1 ms), once two gaps agree after 2 ms (a 1 ms clock: about
// 2 ms), and when 40 ms have passed with no gap under 5 ms (a coarse clock,
// resistFingerprinting's 16.7–100 ms: one or two of its steps), or 100 ms in all.
// A thread descheduled mid-spin (a loaded machine, a garbage collection) sees the clock
// jump by the pause, which is not the step: CI read 8.06 ms for Firefox's 20 µs clock
// when the spin stopped at 5 ms after that one gap, then 5 ms for WebKit's 1 ms clock
// when two pauses agreed within 50 %. Pauses rarely agree within 10 %, but they can: a
// run read 4.6 ms for Chromium's 0.1 ms clock after pauses of 5 and 4.6 ms. So two
// agreeing gaps end the spin only at 2 ms or finer (the 1 ms clocks this is for); larger
// ones may be pauses, and the spin goes on to its other ends.
function timerResolution() {
  let best = Infinity;
  let agreeing = 0;
  let last = performance.now();
  const start = last;
  // At most a million readings (tens of ms here, by engine; a slow coarse clock may then
  // get no step): a clock that never moved would otherwise hang the page. None is
  // known; the page is not ours to risk.
  for (let changes = 0, readings = 0; changes < 8 && readings < 1e6; readings += 1) {
    const t = performance.now();
    if (t === last) continue;
    const gap = t - last;
    if (gap < best / 1.1) {
      best = gap;
      agreeing = 1;
    } else if (gap <= best * 1.1) {
      best = Math.min(best, gap);
      agreeing += 1;
    }
    last = t;
    changes += 1;
    if (agreeing >= 2 && best <= 2 && t - start >= 2) break;
    if (t - start > (best >= 5 ? 40 : 100)) break;
  }
  return Number.isFinite(best) ? best : null;
}

// Measured once per page (it cannot change: isolation is fixed when the page loads); a
// failed measurement is tried again by the next probe.
let pageClockStep = null;
export const clockStep = () => (pageClockStep = pageClockStep || timerResolution());
