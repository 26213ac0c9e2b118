//! HTTP/1.1: one connection per session, driven in the session's own task (no hop between
//! tasks per request); a connection the server closed while idle is replaced, not counted.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use http::Request;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use throng_core::{ErrorClass, Outcome};
use throng_net::{message, Counters, Stream};

use super::{read_response, Body, Failure, HttpDriver, Response, Session};
use crate::classify::classify;

type H1Connection = http1::Connection<TokioIo<Stream>, Body>;

pub(super) struct H1 {
    pub(super) sender: http1::SendRequest<Body>,
    pub(super) conn: Pin<Box<H1Connection>>,
    pub(super) counters: Arc<Counters>,
    pub(super) fresh: bool,
}

impl HttpDriver {
    pub(super) async fn connect_h1(&self) -> Result<H1, Outcome> {
        let (stream, counters) = self.connect().await?;
        // hyper's adaptive read buffer (16 KiB a connection once in use) is kept: a fixed 4 KiB
        // one saves 5 MB at 1,000 connections but costs 2.3 times the CPU on 1 MB bodies.
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| Outcome::failed(classify(&e), message(&e)))?;
        Ok(H1 {
            sender,
            conn: Box::pin(conn),
            counters,
            fresh: true,
        })
    }

    pub(super) async fn execute_h1(
        &self,
        session: &mut Session,
        req: Request<Body>,
        keep: bool,
    ) -> (Outcome, Option<Response>) {
        let reusable = match &mut session.h1 {
            Some(h) => {
                // A connection the server closed while idle is replaced, not counted as a failure.
                let conn = &mut h.conn;
                let ended = poll_fn(|cx| Poll::Ready(conn.as_mut().poll(cx).is_ready())).await;
                !ended && !h.sender.is_closed()
            }
            None => false,
        };
        if !reusable {
            session.h1 = None;
            // Boxed: a connect (with its TLS handshake) is rare, and inline it would make every
            // user's task several kilobytes larger for the whole run.
            match Box::pin(self.connect_h1()).await {
                Ok(h) => session.h1 = Some(h),
                Err(o) => return (o, None),
            }
        }
        let Some(h) = session.h1.as_mut() else {
            return (Outcome::failed(ErrorClass::Other, "no connection"), None);
        };
        let (s0, r0) = if h.fresh { (0, 0) } else { h.counters.read() };
        h.fresh = false;
        let H1 { sender, conn, .. } = h;
        let result = {
            let exchange = async {
                sender.ready().await.map_err(Failure::Request)?;
                let resp = sender.send_request(req).await.map_err(Failure::Request)?;
                read_response(resp, keep).await
            };
            let mut exchange = std::pin::pin!(exchange);
            // The connection is driven here, in the user's own task. When it ends (the server
            // closed it, or sent something that is not HTTP) the exchange still has to be polled to
            // the end: the response may be complete, or its error is the one that says why.
            let mut ended: Option<Result<(), hyper::Error>> = None;
            let result: Result<Response, Failure> = loop {
                tokio::select! {
                    biased;
                    r = &mut exchange => break r,
                    r = conn.as_mut(), if ended.is_none() => ended = Some(r),
                }
            };
            match (result, ended) {
                (Err(Failure::Request(e)), Some(Err(conn_err)))
                    if e.is_canceled() || e.is_closed() =>
                {
                    Err(Failure::Request(conn_err))
                }
                (Err(Failure::Request(e)), Some(Ok(()))) if e.is_canceled() || e.is_closed() => {
                    Err(Failure::Closed)
                }
                (r, _) => r,
            }
        };
        let (s1, r1) = h.counters.read();
        let (mut outcome, response) = self.finish(result, keep);
        outcome.bytes_sent = s1 - s0;
        outcome.bytes_received = r1 - r0;
        if outcome.error.is_some_and(|c| c != ErrorClass::HttpStatus) || !self.cfg.keepalive {
            session.h1 = None;
        }
        (outcome, response)
    }
}
