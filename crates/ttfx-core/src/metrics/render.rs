//! Render family: how long the page took to show text the decoder already had.

use super::{Measured, Source};
use crate::milestone::Milestone;
use crate::timeline::Timeline;

/// `render_lag` = first_paint − first_visible_token, labelled with the paint method (an
/// Element Timing `renderTime` and a rAF estimate are not the same fact). A paint with no
/// recorded method is labelled a rAF estimate, the least precise one, rather than dropped.
pub fn render_lag(t: &Timeline) -> Option<Measured> {
    let lag = since_visible(t, Milestone::FirstPaint)?;
    let source = t.paint_method.map_or(Source::RafEstimate, Source::from);
    Some(Measured { value: lag, source })
}

/// `dom_lag` = first_dom − first_visible_token. It can be slightly negative: the app sees
/// each chunk before the decoder does, so a synchronous insert can beat the decoder's
/// timestamp by the decode time.
pub fn dom_lag(t: &Timeline) -> Option<Measured> {
    since_visible(t, Milestone::FirstDom).map(Measured::client)
}

fn since_visible(t: &Timeline, m: Milestone) -> Option<f64> {
    Some(t.milestones.get(m)? - t.milestones.get(Milestone::FirstVisibleToken)?)
}
