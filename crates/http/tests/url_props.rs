//! Property tests of target URLs: no input panics, and an accepted URL never loses the port
//! that was written in it (the bug this parser exists to prevent).

use proptest::prelude::*;
use throng_http::{parse_url, HttpConfig};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_text_is_an_answer_not_a_panic(s in "\\PC{0,40}") {
        let _ = HttpConfig::new(&s);
    }

    #[test]
    fn a_written_port_is_kept_or_refused(
        scheme in prop::sample::select(vec!["http", "https", "HTTP", "htp", ""]),
        host in prop::sample::select(vec![
            "127.0.0.1", "localhost", "[::1]", "", "a b", "u:p@h", "::1", "h.example",
        ]),
        port in prop_oneof![
            "[0-9]{1,6}".prop_map(String::from),
            "[-+]?[0-9a-z]{0,6}".prop_map(String::from),
        ],
        path in "(/[a-z?=#%]{0,5}){0,2}",
    ) {
        let url = format!("{scheme}://{host}:{port}{path}");
        if let Ok(cfg) = HttpConfig::new(&url) {
            let n: u32 = port.parse().map_err(|e| TestCaseError::fail(format!("{url}: {e}")))?;
            prop_assert!((1..=65535).contains(&n), "{url} accepted");
            prop_assert_eq!(cfg.url.port_u16(), Some(n as u16), "{}", url);
            prop_assert!(cfg.authority().ends_with(&format!(":{n}")), "{}", url);
        }
    }

    #[test]
    fn without_a_port_the_scheme_default_is_used(
        tls in any::<bool>(),
        host in "[a-z][a-z0-9-]{0,10}",
    ) {
        let url = format!("{}://{host}/", if tls { "https" } else { "http" });
        let cfg = parse_url(&url).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(cfg.port_u16(), None);
        let cfg = HttpConfig::new(&url).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(cfg.authority(), format!("{host}:{}", if tls { 443 } else { 80 }));
    }
}
