//! Where a request's time went: its phases (connecting, TLS handshake, sending, waiting for the
//! first byte of the answer, receiving it), each timed by the protocol that knows them, and
//! whether its connection was new or reused.
//!
//! The set is fixed and neutral: a protocol reports the phases it has (HTTP all five, a
//! WebSocket message only `wait` and `receive`, say) and none of its own names. The engine adds
//! each to a histogram of its row ([`PhaseStats`]), allocated only once a row's first phase
//! arrives, so a protocol that reports none pays nothing beyond one comparison a request.
//!
//! The phases are measured from actual times inside the request; its latency counts from the
//! intended start. What latency holds beyond the request's own phases is *blocked* (k6's word):
//! the open loop's lag and queueing, and the engine's own time around the call. So, per request,
//! `latency = blocked + connect + tls + send + wait + receive` (to the microsecond), except that a
//! connection opened before the request (a user's first, by `Driver::connect`: not the request's
//! time) still gives that request its connect and TLS phases but leaves them out of the sum.

use std::time::Duration;

use hdrhistogram::Histogram;

/// One phase of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Opening the transport (TCP's connect).
    Connect,
    /// The TLS handshake.
    Tls,
    /// Writing the request.
    Send,
    /// From the request written to the first byte of the answer (time to first byte).
    Wait,
    /// From the first byte of the answer to its last.
    Receive,
}

impl Phase {
    /// Every phase, in the order a request goes through them.
    pub const ALL: [Phase; 5] = [
        Phase::Connect,
        Phase::Tls,
        Phase::Send,
        Phase::Wait,
        Phase::Receive,
    ];

    /// Its position in [`Phase::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Its name in results, metrics and tables (`connect`, `tls`, `send`, `wait`, `receive`).
    pub const fn name(self) -> &'static str {
        match self {
            Phase::Connect => "connect",
            Phase::Tls => "tls",
            Phase::Send => "send",
            Phase::Wait => "wait",
            Phase::Receive => "receive",
        }
    }
}

/// How a request got its connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Connection {
    /// The protocol does not say (and reports no phases).
    #[default]
    Unknown = 0,
    /// A connection an earlier request used: no connect or TLS phase.
    Reused,
    /// A connection opened for this request, inside its time.
    New,
    /// A connection opened before this request, outside its time (a user's first connection,
    /// opened by `Driver::connect`): its connect and TLS phases are this request's, but not in
    /// its latency.
    Before,
}

/// The phases of one request, as its protocol timed them. Empty (the default) for a protocol
/// that times none; a phase the request did not reach (a failed connect has no `send`) or did not
/// have (a reused connection has no `connect`) is absent.
///
/// Kept small, as it travels in every [`crate::Outcome`] (at 128 bytes, clippy's bound for an
/// error type, `Outcome` would be boxed in `Result`s): 16 bytes. `send`, `wait` and `receive`
/// are whole microseconds (the histograms' resolution; at least 1 µs once set, 0 for absent, up
/// to 71 minutes). `connect` and `tls` share a word with how the connection was got: each 15 bits
/// of a small float (10 bits of mantissa: exact below 1,024 µs, within 0.1% above, as the
/// histograms' three significant figures are).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Phases {
    /// `[open, send, wait, receive]`; `open` is the [`Connection`] (2 bits), `connect` and
    /// `tls` (15 bits each).
    times: [u32; 4],
}

/// The bits of the first word that hold `connect` and `tls`.
const TIME_BITS: u32 = (1 << 30) - 1;

/// A small float of 15 bits, 0 for none: an exponent of 5 bits over a mantissa of 10.
/// Rounded to the nearest value it can hold.
fn pack(us: u64) -> u32 {
    let us = us.max(1);
    let mut shift = (64 - us.leading_zeros()).saturating_sub(10);
    let mut mantissa = match shift {
        0 => us,
        s => (us >> s) + ((us >> (s - 1)) & 1),
    };
    if mantissa > 1023 {
        mantissa >>= 1;
        shift += 1;
    }
    if shift > 31 {
        return (31 << 10) | 1023;
    }
    (shift << 10) | mantissa as u32
}

fn unpack(v: u32) -> Option<Duration> {
    let us = u64::from(v & 1023) << (v >> 10);
    (v != 0).then(|| Duration::from_micros(us))
}

impl Phases {
    /// No phase yet, on a connection got as `connection` says.
    pub fn on(connection: Connection) -> Self {
        let mut p = Phases::default();
        p.times[0] = (connection as u32) << 30;
        p
    }

    /// How the request got its connection.
    #[inline]
    pub fn connection(&self) -> Connection {
        match self.times[0] >> 30 {
            1 => Connection::Reused,
            2 => Connection::New,
            3 => Connection::Before,
            _ => Connection::Unknown,
        }
    }

    /// Whether the protocol reported anything.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.times == [0; 4]
    }

    /// Sets one phase's time.
    #[inline]
    pub fn set(&mut self, phase: Phase, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        match phase {
            Phase::Connect => self.times[0] = (self.times[0] & !(0x7fff << 15)) | pack(us) << 15,
            Phase::Tls => self.times[0] = (self.times[0] & !0x7fff) | pack(us),
            _ => {
                self.times[phase.index() - 1] = u32::try_from(us).unwrap_or(u32::MAX).max(1);
            }
        }
    }

    /// One phase's time, if the request had it.
    #[inline]
    pub fn get(&self, phase: Phase) -> Option<Duration> {
        match phase {
            Phase::Connect => unpack((self.times[0] >> 15) & 0x7fff),
            Phase::Tls => unpack(self.times[0] & 0x7fff),
            _ => match self.times[phase.index() - 1] {
                0 => None,
                us => Some(Duration::from_micros(u64::from(us))),
            },
        }
    }

    /// Every phase the request had, with its time.
    pub fn iter(&self) -> impl Iterator<Item = (Phase, Duration)> + '_ {
        Phase::ALL
            .iter()
            .filter_map(|p| self.get(*p).map(|d| (*p, d)))
    }

    /// The phases' time inside the request's own latency: all of them, less connect and TLS
    /// when the connection was opened before the request.
    pub fn inside(&self) -> Duration {
        Duration::from_micros(self.inside_us())
    }

    /// [`Phases::inside`] in microseconds, on the words as they are (the recorder's path).
    #[inline]
    fn inside_us(&self) -> u64 {
        let [open, send, wait, receive] = self.times.map(u64::from);
        let own = send + wait + receive;
        match open & u64::from(TIME_BITS) {
            0 => own,
            _ if self.connection() == Connection::Before => own,
            _ => own + micros(self.opening()),
        }
    }

    /// Time to first byte from the request's actual start: every phase but `receive` inside
    /// its time. `None` when no byte of an answer came.
    pub fn to_first_byte(&self) -> Option<Duration> {
        self.get(Phase::Wait)?;
        let receive = self.get(Phase::Receive).unwrap_or_default();
        Some(self.inside().saturating_sub(receive))
    }

    /// The connection's opening (connect and TLS), wherever it was timed; zero on a reused one.
    pub fn opening(&self) -> Duration {
        self.get(Phase::Connect).unwrap_or_default() + self.get(Phase::Tls).unwrap_or_default()
    }
}

/// A row's phases: a histogram (µs) per [`Phase`], the blocked time, and its requests' use of
/// connections.
#[derive(Debug, Clone)]
pub struct PhaseStats {
    /// One histogram per phase, indexed by [`Phase::index`]: the requests that had the phase.
    pub times: [Histogram<u64>; 5],
    /// Latency less the request's own phases (see the module's docs), of the requests whose
    /// answer came whole (they have a `receive`).
    pub blocked: Histogram<u64>,
    /// Requests that opened a connection (inside their time or just before).
    pub new: u64,
    /// Requests on a connection an earlier request used.
    pub reused: u64,
}

impl Default for PhaseStats {
    fn default() -> Self {
        PhaseStats {
            times: std::array::from_fn(|_| crate::histogram::new()),
            blocked: crate::histogram::new(),
            new: 0,
            reused: 0,
        }
    }
}

impl PhaseStats {
    /// One phase's histogram.
    pub fn of(&self, phase: Phase) -> &Histogram<u64> {
        &self.times[phase.index()]
    }

    /// Adds one request's phases; `latency` is its latency (µs) when its answer came whole
    /// and it is timed in the row's latency, for its blocked time.
    #[inline]
    pub fn record(&mut self, p: &Phases, latency: Option<u64>) {
        match p.connection() {
            Connection::Reused => self.reused += 1,
            Connection::New | Connection::Before => self.new += 1,
            Connection::Unknown => {}
        }
        // The words as they are: a request on a reused connection (most) has no opening to
        // unpack, and its own phases are whole microseconds already.
        let [open, send, wait, receive] = p.times;
        if open & TIME_BITS != 0 {
            self.record_opening(p);
        }
        for (i, us) in [(2, send), (3, wait), (4, receive)] {
            if us != 0 {
                crate::histogram::record(&mut self.times[i], u64::from(us));
            }
        }
        if let (Some(latency), true) = (latency, receive != 0) {
            crate::histogram::record(&mut self.blocked, latency.saturating_sub(p.inside_us()));
        }
    }

    #[cold]
    fn record_opening(&mut self, p: &Phases) {
        for phase in [Phase::Connect, Phase::Tls] {
            if let Some(d) = p.get(phase) {
                crate::histogram::record(&mut self.times[phase.index()], micros(d));
            }
        }
    }

    /// Adds another row's (exact: histograms add bucket by bucket).
    pub fn add(&mut self, other: &PhaseStats) {
        // Histograms grow to what they are given (histogram::new), so adding cannot fail.
        for (mine, theirs) in self.times.iter_mut().zip(&other.times) {
            let _ = mine.add(theirs);
        }
        let _ = self.blocked.add(&other.blocked);
        self.new += other.new;
        self.reused += other.reused;
    }

    /// The share of requests on a reused connection (0 to 1), of those that said.
    pub fn reused_share(&self) -> f64 {
        let all = self.new + self.reused;
        if all == 0 {
            0.0
        } else {
            self.reused as f64 / all as f64
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn phases_are_small_and_whole_microseconds() {
        assert_eq!(std::mem::size_of::<Phases>(), 16);
        let mut p = Phases::on(Connection::Before);
        p.set(Phase::Connect, Duration::from_secs(3_600));
        p.set(Phase::Tls, Duration::from_micros(1_023));
        assert_eq!(
            p.connection(),
            Connection::Before,
            "a long connect keeps its kind"
        );
        let hour = p.get(Phase::Connect).unwrap().as_micros() as f64;
        assert!((hour / 3.6e9 - 1.0).abs() < 1e-3, "{hour}");
        assert_eq!(p.get(Phase::Tls), Some(Duration::from_micros(1_023)));
        // Within a tenth of a percent everywhere, as the histograms' three figures are.
        for us in (1..2_000_000u64)
            .step_by(997)
            .chain([u64::from(u32::MAX) * 7])
        {
            p.set(Phase::Tls, Duration::from_micros(us));
            let got = p.get(Phase::Tls).unwrap().as_micros() as f64;
            assert!(
                (got / us as f64 - 1.0).abs() <= 1e-3,
                "{us} µs read back as {got}"
            );
        }
        assert_eq!(p.connection(), Connection::Before);
        let mut p = Phases::on(Connection::Reused);
        p.set(Phase::Send, Duration::from_nanos(300));
        p.set(Phase::Wait, Duration::from_nanos(2_700));
        assert_eq!(p.get(Phase::Send), Some(Duration::from_micros(1)));
        assert_eq!(p.get(Phase::Wait), Some(Duration::from_micros(2)));
        assert_eq!(p.get(Phase::Receive), None);
    }

    #[test]
    fn phases_add_up_to_latency_with_blocked_the_rest() {
        let mut p = Phases::on(Connection::New);
        for (phase, n) in [(Phase::Connect, 1), (Phase::Tls, 2), (Phase::Send, 3)] {
            p.set(phase, ms(n));
        }
        p.set(Phase::Wait, ms(4));
        p.set(Phase::Receive, ms(5));
        assert_eq!(p.inside(), ms(15));
        assert_eq!(p.to_first_byte(), Some(ms(10)));
        let mut s = PhaseStats::default();
        s.record(&p, Some(20_000));
        assert_eq!(s.blocked.max(), s.blocked.highest_equivalent(5_000));
        assert_eq!(s.blocked.len(), 1);
        // Opened before the request: its opening is reported, not inside its time.
        let phases = p.iter().collect::<Vec<_>>();
        p = Phases::on(Connection::Before);
        for (phase, d) in phases {
            p.set(phase, d);
        }
        assert_eq!(p.inside(), ms(12));
        assert_eq!(p.to_first_byte(), Some(ms(7)));
        assert_eq!(p.opening(), ms(3));
        s.record(&p, None);
        assert_eq!((s.new, s.reused), (2, 0));
        assert_eq!(s.blocked.len(), 1, "no latency given: no blocked time");
        let mut reused = Phases::on(Connection::Reused);
        reused.set(Phase::Wait, ms(1));
        s.record(&reused, Some(1_000));
        assert_eq!(s.of(Phase::Connect).len(), 2);
        assert_eq!(s.of(Phase::Wait).len(), 3);
        assert!((s.reused_share() - 1.0 / 3.0).abs() < 1e-9);
        let mut t = PhaseStats::default();
        t.add(&s);
        t.add(&s);
        assert_eq!((t.new, t.reused, t.of(Phase::Wait).len()), (4, 2, 6));
        assert!(Phases::default().is_empty() && !reused.is_empty());
    }
}
