//! Property tests of thresholds: no input panics, and an accepted threshold's limit is a value
//! the metric can take.

use proptest::prelude::*;
use throng_report::{Metric, Threshold};

fn threshold_like() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        "p[0-9]{0,4}(\\.[0-9]{0,7})?",
        Just("mean".to_string()),
        Just("avg".to_string()),
        Just("min".to_string()),
        Just("max".to_string()),
        Just("rps".to_string()),
        Just("error_rate".to_string()),
        "[a-z_]{0,6}",
    ];
    let label = prop_oneof![Just(String::new()), "\\{[A-Z /<>=?]{0,6}\\}"];
    let op = "[<>=!]{0,3}";
    let value = "[-+]?([0-9]{0,5}(\\.[0-9]{0,3})?(e[-+]?[0-9]{1,3})?|NaN|inf) ?(ms|us|µs|s|m|%|x)?";
    (name, label, " ?", op, " ?", value)
        .prop_map(|(n, l, a, o, b, v)| format!("{n}{l}{a}{o}{b}{v}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn any_text_is_an_answer_not_a_panic(s in "\\PC{0,30}") {
        let _ = s.parse::<Threshold>();
    }

    #[test]
    fn accepted_limits_are_in_the_metrics_range(s in threshold_like()) {
        if let Ok(t) = s.parse::<Threshold>() {
            prop_assert!(t.limit.is_finite() && t.limit >= 0.0, "{s}: {t:?}");
            match t.metric {
                Metric::ErrorRate => prop_assert!(t.limit <= 1.0, "{s}: {t:?}"),
                Metric::Quantile(q) => prop_assert!(q > 0 && q < 100_000, "{s}: {t:?}"),
                _ => {}
            }
            prop_assert!(t.label.as_deref().is_none_or(|l| !l.trim().is_empty()), "{s}");
        }
    }
}
