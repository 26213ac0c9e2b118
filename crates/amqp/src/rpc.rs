//! RPC: a request published mandatory on the worker's confirm-mode channel with `reply-to:
//! amq.rabbitmq.reply-to` and a correlation id; its confirm tells a returned (unroutable) or
//! nacked request at once, and its reply, handed over by the connection's one reply-to
//! consumer, ends the call.

use bytes::Bytes;
use lapin::message::Delivery;
use lapin::options::BasicPublishOptions;
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Confirmation};
use std::sync::atomic::Ordering;
use throng_core::step::Reply;
use throng_core::{ErrorClass, Outcome};
use tokio::sync::oneshot;
use tokio::time::{timeout_at, Instant};

use crate::client::{route, AmqpClient, Conn, REPLY_TO};
use crate::status::{self, NACKED, OK};

impl AmqpClient {
    pub(crate) async fn rpc(
        &self,
        conn: &Conn,
        exchange: &str,
        key: &str,
        payload: Bytes,
        headers: FieldTable,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        let deadline = Instant::now() + self.timeout;
        let id = format!(
            "{:x}.{}",
            self.tag,
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = conn.waiting.lock() {
            w.insert(id.clone(), tx);
        }
        let forget = || {
            if let Ok(mut w) = conn.waiting.lock() {
                w.remove(&id);
            }
        };
        let props = BasicProperties::default()
            .with_reply_to(REPLY_TO.into())
            .with_correlation_id(id.as_str().into())
            .with_headers(headers);
        let sent = payload.len() as u64;
        let what = format!("RPC to {}", route(exchange, key));
        let mandatory = BasicPublishOptions {
            mandatory: true,
            ..BasicPublishOptions::default()
        };
        let published = timeout_at(deadline, async {
            conn.rpc
                .basic_publish(exchange.into(), key.into(), mandatory, &payload, props)
                .await?
                .await
        })
        .await;
        let mut outcome = match published {
            Ok(Ok(Confirmation::Ack(None) | Confirmation::NotRequested)) => {
                match timeout_at(deadline, rx).await {
                    Ok(Ok(reply)) => return self.replied(reply, sent, want_reply),
                    Ok(Err(_)) | Err(_) => {
                        forget();
                        self.timed_out(conn, format!("{what}: no reply within {:?}", self.timeout))
                    }
                }
            }
            Ok(Ok(Confirmation::Ack(Some(returned)))) => {
                forget();
                self.no_route.fetch_add(1, Ordering::Relaxed);
                let o = Outcome {
                    status: status::status(returned.reply_code),
                    ..Outcome::failed(
                        ErrorClass::Status,
                        format!("{what}: returned by the broker: {}", returned.reply_text),
                    )
                };
                let reply = want_reply.then(|| Reply {
                    status: o.status,
                    ..Reply::default()
                });
                return (
                    Outcome {
                        bytes_sent: sent,
                        ..o
                    },
                    reply,
                );
            }
            Ok(Ok(Confirmation::Nack(_))) => {
                forget();
                self.rpc_nacked.fetch_add(1, Ordering::Relaxed);
                Outcome {
                    status: NACKED,
                    ..Outcome::failed(ErrorClass::Status, format!("{what}: nacked by the broker"))
                }
            }
            Ok(Err(e)) => {
                forget();
                self.failed(conn, &what, &e)
            }
            Err(_) => {
                forget();
                self.timed_out(
                    conn,
                    format!("{what}: not confirmed within {:?}", self.timeout),
                )
            }
        };
        outcome.bytes_sent = sent;
        (outcome, None)
    }

    fn replied(&self, d: Delivery, sent: u64, want_reply: bool) -> (Outcome, Option<Reply>) {
        let outcome = Outcome {
            status: OK,
            bytes_sent: sent,
            bytes_received: d.data.len() as u64,
            ..Outcome::default()
        };
        let reply = want_reply.then(|| Reply {
            status: OK,
            metadata: d
                .properties
                .headers()
                .as_ref()
                .map(|h| {
                    h.inner()
                        .iter()
                        .filter_map(|(k, v)| {
                            let v = match v {
                                AMQPValue::LongString(s) => s.to_string(),
                                AMQPValue::ShortString(s) => s.to_string(),
                                _ => return None,
                            };
                            Some((k.as_str().to_ascii_lowercase(), v))
                        })
                        .collect()
                })
                .unwrap_or_default(),
            body: Bytes::from(d.data),
            json: None,
        });
        (outcome, reply)
    }
}
