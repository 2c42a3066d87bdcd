//! Number formatting and chart scales shared by the tables and the SVG charts.

use serde::Serialize;

/// Milliseconds (and every other statistic) with one decimal: what the tables show, and
/// what the e2e test recomputes from the exported JSON.
pub fn num(v: f64) -> String {
    format!("{v:.1}")
}

/// An optional value, or a dash when it was not observed.
pub fn opt(v: Option<f64>) -> String {
    v.map(num).unwrap_or_else(|| "–".to_owned())
}

/// A serde enum's wire name (`in_band`, `streamed`, …), as the report spells it.
pub fn wire_name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// An SVG path through `points` (viewBox units) in order: `M x y L x y …`; empty for
/// no points.
pub fn svg_path(points: &[(f64, f64)]) -> String {
    points
        .iter()
        .enumerate()
        .map(|(k, (x, y))| format!("{}{x:.1} {y:.1}", if k == 0 { "M" } else { "L" }))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Maps a data range onto a pixel range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub d0: f64,
    pub d1: f64,
    pub p0: f64,
    pub p1: f64,
}

impl Scale {
    /// A scale from 0 to `max` (at least 1, so an empty chart still has an axis).
    pub fn zero_to(max: f64, p0: f64, p1: f64) -> Scale {
        let max = if max.is_finite() && max > 0.0 {
            max
        } else {
            1.0
        };
        Scale {
            d0: 0.0,
            d1: max,
            p0,
            p1,
        }
    }

    /// A scale from `min(lo, 0)` to `hi` (at least 1 wide): a voice turn's speech comes
    /// before the request, so its axis reaches left of 0.
    pub fn spanning(lo: f64, hi: f64, p0: f64, p1: f64) -> Scale {
        let lo = if lo.is_finite() { lo.min(0.0) } else { 0.0 };
        let mut s = Scale::zero_to(hi - lo, p0, p1);
        s.d0 = lo;
        s.d1 += lo;
        s
    }

    pub fn at(&self, v: f64) -> f64 {
        let span = self.d1 - self.d0;
        if span == 0.0 {
            return self.p0;
        }
        self.p0 + (v - self.d0) / span * (self.p1 - self.p0)
    }

    /// Round tick values (1, 2, 5 × 10^k) covering the domain, about `n` of them.
    pub fn ticks(&self, n: usize) -> Vec<f64> {
        let span = self.d1 - self.d0;
        if !(span.is_finite() && span > 0.0) || n == 0 {
            return vec![self.d0];
        }
        let raw = span / n as f64;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .into_iter()
            .map(|m| m * mag)
            .find(|s| span / s <= n as f64)
            .unwrap_or(10.0 * mag);
        let mut ticks = Vec::new();
        let mut t = (self.d0 / step).ceil() * step;
        while t <= self.d1 + step * 1e-9 {
            ticks.push(t);
            t += step;
        }
        ticks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_maps_ends_and_ticks_are_round() {
        let s = Scale::zero_to(1234.0, 100.0, 600.0);
        assert_eq!(s.at(0.0), 100.0);
        assert_eq!(s.at(1234.0), 600.0);
        assert_eq!(s.ticks(5), vec![0.0, 500.0, 1000.0]);
        assert_eq!(Scale::zero_to(0.0, 0.0, 10.0).d1, 1.0);
        // A turn: from 1.5 s before the request to 1 s after it.
        let s = Scale::spanning(-1500.0, 1000.0, 0.0, 250.0);
        assert_eq!(
            (s.at(-1500.0), s.at(0.0), s.at(1000.0)),
            (0.0, 150.0, 250.0)
        );
        assert_eq!(s.ticks(3), vec![-1000.0, 0.0, 1000.0]);
        assert_eq!(Scale::spanning(200.0, 1000.0, 0.0, 10.0).d0, 0.0);
    }

    #[test]
    fn a_path_moves_to_its_first_point_and_draws_to_the_rest() {
        assert_eq!(
            svg_path(&[(1.0, 2.0), (3.24, 4.0), (5.0, 6.06)]),
            "M1.0 2.0 L3.2 4.0 L5.0 6.1"
        );
        assert_eq!(svg_path(&[]), "");
    }

    #[test]
    fn numbers_have_one_decimal() {
        assert_eq!(num(190.26), "190.3");
        assert_eq!(opt(None), "–");
    }
}
