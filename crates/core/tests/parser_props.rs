//! Property tests of durations and stage lists: no input panics, and whatever is accepted is
//! finite, non-negative and within the cap.

use proptest::prelude::*;
use throng_core::stages::{self, parse_duration, MAX_DURATION};

/// Text shaped like durations: numbers in every notation, signs, units, and specials.
fn duration_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "[-+]?[0-9]{0,25}(\\.[0-9]{0,4})?(e[-+]?[0-9]{1,3})?(ns|us|ms|s|m|h|d|w|y|x)?",
        "[-+]?(NaN|nan|inf|infinity|Inf)(s|ms)?",
        "([0-9]{1,4}(h|m|s|ms) ?){1,3}",
        "\\PC{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn durations_never_panic_and_stay_in_range(s in duration_like()) {
        if let Ok(d) = parse_duration(&s) {
            prop_assert!(d <= MAX_DURATION, "{s} gave {d:?}");
        }
    }

    #[test]
    fn any_float_as_seconds_is_an_answer(x in any::<f64>()) {
        let _ = parse_duration(&x.to_string());
        let _ = parse_duration(&format!("{x:e}"));
    }

    #[test]
    fn stage_lists_never_panic_and_accepted_ones_are_sound(
        parts in prop::collection::vec(
            (duration_like(), "[-+]?([0-9]{0,6}(\\.[0-9]{0,3})?(e[0-9]{1,3})?|NaN|inf)"),
            0..5,
        ),
        sep in prop_oneof![",", ", ", ",,"],
        trailing in any::<bool>(),
    ) {
        let mut text = parts
            .iter()
            .map(|(d, t)| format!("{d}:{t}"))
            .collect::<Vec<_>>()
            .join(&sep);
        if trailing {
            text.push(',');
        }
        if let Ok(list) = stages::parse(&text) {
            let total = stages::total(&list);
            prop_assert!(!total.is_zero() && total <= MAX_DURATION, "{text}");
            prop_assert!(!text.contains(",,") && !trailing, "{text}: an empty stage was accepted");
            for st in &list {
                prop_assert!(st.target.is_finite() && st.target >= 0.0, "{text}");
            }
        }
    }
}
