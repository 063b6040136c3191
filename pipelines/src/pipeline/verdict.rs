//! What the stack model says about each kind of call, in words: which layer carries its time and
//! which explains its bandwidth, and, where they differ, why a layer without time of its own is not it.
use models::report::StackGroup;

/// One sentence per kind of call.
pub fn stack_groups(groups: &[StackGroup]) -> Vec<String> {
    groups.iter().filter_map(group).collect()
}

fn pct(v: f64) -> String {
    format!("{:.1}%", 100.0 * v)
}

fn group(g: &StackGroup) -> Option<String> {
    let explains = g.layers.first()?;
    let carries = g
        .layers
        .iter()
        .filter_map(|l| Some((l, l.time_share?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let differ = carries.is_some_and(|(l, _)| l.layer != explains.layer);
    let mut s = match carries {
        Some((l, t)) if l.layer == explains.layer => format!(
            "{} ({} calls): {} carries the most time ({}) and explains the most of the bandwidth ({} of the model's |SHAP|).",
            g.group,
            g.rows,
            l.layer,
            pct(t),
            pct(explains.share)
        ),
        Some((l, t)) => format!(
            "{} ({} calls): {} carries the most time ({}), but {} explains the most of the bandwidth ({} of the model's |SHAP|, against {} for {}): the shares follow what varies from call to call, the time what every call spends.",
            g.group,
            g.rows,
            l.layer,
            pct(t),
            explains.layer,
            pct(explains.share),
            pct(l.share),
            l.layer
        ),
        None => format!(
            "{} ({} calls): {} explains the most of the bandwidth ({} of the model's |SHAP|); no layer has exclusive time.",
            g.group,
            g.rows,
            explains.layer,
            pct(explains.share)
        ),
    };
    let timeless: Vec<&str> = g
        .layers
        .iter()
        .filter(|l| l.time_share.is_none())
        .map(|l| l.layer.as_str())
        .collect();
    if differ && !timeless.is_empty() {
        s.push_str(&format!(
            " {} {} no time of {} own: {} events are points (a page added to the cache is a miss, counted), so what a miss costs shows as the time of the layers that do the work, block for its I/O and self for the copy.",
            timeless.join(", "),
            if timeless.len() == 1 { "has" } else { "have" },
            if timeless.len() == 1 { "its" } else { "their" },
            if timeless.len() == 1 { "its" } else { "their" },
        ));
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use models::report::StackGroupLayer;

    fn layer(layer: &str, share: f64, time_share: Option<f64>) -> StackGroupLayer {
        StackGroupLayer {
            layer: layer.to_string(),
            share,
            time_share,
        }
    }

    #[test]
    fn says_when_the_layer_that_carries_the_time_is_not_the_one_that_explains_it() {
        let groups = [
            StackGroup {
                group: "read direct".to_string(),
                rows: 10,
                test_rows: 2,
                context_share: 0.5,
                layers: vec![
                    layer("block", 0.3, Some(0.7)),
                    layer("self", 0.2, Some(0.3)),
                ],
            },
            StackGroup {
                group: "read buffered".to_string(),
                rows: 20,
                test_rows: 4,
                context_share: 0.3,
                layers: vec![
                    layer("self", 0.56, Some(0.3)),
                    layer("block", 0.07, Some(0.5)),
                    layer("page_cache", 0.07, None),
                ],
            },
        ];
        assert_eq!(
            stack_groups(&groups),
            [
                "read direct (10 calls): block carries the most time (70.0%) and explains the most of the bandwidth (30.0% of the model's |SHAP|).",
                "read buffered (20 calls): block carries the most time (50.0%), but self explains the most of the bandwidth (56.0% of the model's |SHAP|, against 7.0% for block): the shares follow what varies from call to call, the time what every call spends. page_cache has no time of its own: its events are points (a page added to the cache is a miss, counted), so what a miss costs shows as the time of the layers that do the work, block for its I/O and self for the copy."
            ]
        );
    }
}
