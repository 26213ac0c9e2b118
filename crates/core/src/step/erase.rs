//! The typed contract erased, once, for every protocol: what a scenario mixing protocols holds
//! (workers and sessions as `Box<dyn Any>`, one boxed future per call).

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::{
    Client, ClientOptions, Node, Place, Protocol, Render, Reply, StepError, TemplateCompiler,
};
use crate::{Outcome, Status};

/// A boxed future that need not be `Send` (sessions live on one worker thread).
pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// A compiled step of some protocol, type-erased; its client downcasts it.
pub trait StepCall: fmt::Debug + Send + Sync + 'static {
    /// For the client's downcast.
    fn as_any(&self) -> &dyn Any;
}

impl<T: fmt::Debug + Send + Sync + 'static> StepCall for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A [`Client`], type-erased: what a scenario of several protocols holds per target. Core
/// implements it for every client; its workers and sessions are `Box<dyn Any>`, and each call
/// costs one boxed future.
pub trait StepClient: Send + Sync + 'static {
    /// The state of worker `index` of `workers` (see [`Client::worker_of`]).
    fn worker_of(&self, index: usize, workers: usize) -> Box<dyn Any>;

    /// A fresh session for user `user` on a worker made by this client.
    fn session(&self, worker: &dyn Any, user: u64) -> Box<dyn Any>;

    /// Opens what the session needs (see [`Client::connect`]).
    fn connect<'a>(&'a self, session: &'a mut dyn Any) -> LocalFuture<'a, Result<(), Outcome>>;

    /// Sends a compiled step (see [`Client::call`]).
    fn call<'a>(
        &'a self,
        session: &'a mut dyn Any,
        call: &'a dyn StepCall,
        render: &'a dyn Render,
        want_reply: bool,
    ) -> LocalFuture<'a, (Outcome, Option<Reply>)>;

    /// After each iteration (see [`Client::end_iteration`]).
    fn end_iteration<'a>(
        &'a self,
        session: &'a mut dyn Any,
        failed: Option<crate::ErrorClass>,
    ) -> LocalFuture<'a, ()>;

    /// When the user's session ends (see [`Client::close`]).
    fn close<'a>(&'a self, session: &'a mut dyn Any) -> LocalFuture<'a, ()>;

    /// See [`Client::connections_per_user`].
    fn connections_per_user(&self) -> f64;

    /// See [`Client::check`].
    fn check(&self, step: &dyn StepCall) -> Result<(), StepError>;

    /// See [`Client::parts`].
    fn parts(&self, step: &dyn StepCall, label: &str) -> Option<String>;

    /// See [`Client::prepare`].
    fn prepare<'a>(
        &'a self,
        steps: &'a [&'a (dyn StepCall + 'static)],
    ) -> LocalFuture<'a, Result<(), StepError>>;
}

/// A step or session handed to a client that did not make it: a scenario gives each client
/// only its own, so this is a bug, reported as the request's failure rather than a panic.
fn foreign(what: &str) -> Outcome {
    Outcome::failed(
        crate::ErrorClass::Other,
        format!("a {what} of another protocol's client"),
    )
}

impl<C: Client> StepClient for C {
    fn worker_of(&self, index: usize, workers: usize) -> Box<dyn Any> {
        Box::new(Client::worker_of(self, index, workers))
    }

    fn session(&self, worker: &dyn Any, user: u64) -> Box<dyn Any> {
        match worker.downcast_ref::<C::Worker>() {
            Some(w) => Box::new(Client::session(self, w, user)),
            // A worker of another client has no session of this one: its calls fail.
            None => Box::new(()),
        }
    }

    fn connect<'a>(&'a self, session: &'a mut dyn Any) -> LocalFuture<'a, Result<(), Outcome>> {
        match session.downcast_mut::<C::Session>() {
            Some(s) => Box::pin(Client::connect(self, s)),
            None => Box::pin(std::future::ready(Err(foreign("session")))),
        }
    }

    fn call<'a>(
        &'a self,
        session: &'a mut dyn Any,
        call: &'a dyn StepCall,
        render: &'a dyn Render,
        want_reply: bool,
    ) -> LocalFuture<'a, (Outcome, Option<Reply>)> {
        match (
            session.downcast_mut::<C::Session>(),
            call.as_any().downcast_ref::<C::Step>(),
        ) {
            (Some(s), Some(step)) => Box::pin(Client::call(self, s, step, render, want_reply)),
            (None, _) => Box::pin(std::future::ready((foreign("session"), None))),
            (_, None) => Box::pin(std::future::ready((foreign("step"), None))),
        }
    }

    fn end_iteration<'a>(
        &'a self,
        session: &'a mut dyn Any,
        failed: Option<crate::ErrorClass>,
    ) -> LocalFuture<'a, ()> {
        match session.downcast_mut::<C::Session>() {
            Some(s) => Box::pin(Client::end_iteration(self, s, failed)),
            None => Box::pin(std::future::ready(())),
        }
    }

    fn close<'a>(&'a self, session: &'a mut dyn Any) -> LocalFuture<'a, ()> {
        match session.downcast_mut::<C::Session>() {
            Some(s) => Box::pin(Client::close(self, s)),
            None => Box::pin(std::future::ready(())),
        }
    }

    fn connections_per_user(&self) -> f64 {
        Client::connections_per_user(self)
    }

    fn check(&self, step: &dyn StepCall) -> Result<(), StepError> {
        match step.as_any().downcast_ref::<C::Step>() {
            Some(s) => Client::check(self, s),
            None => Err(StepError::at(
                Place::default(),
                "a step of another protocol",
            )),
        }
    }

    fn parts(&self, step: &dyn StepCall, label: &str) -> Option<String> {
        Client::parts(self, step.as_any().downcast_ref::<C::Step>()?, label)
    }

    fn prepare<'a>(
        &'a self,
        steps: &'a [&'a (dyn StepCall + 'static)],
    ) -> LocalFuture<'a, Result<(), StepError>> {
        Box::pin(async move {
            let typed: Vec<&C::Step> = steps
                .iter()
                .filter_map(|s| (**s).as_any().downcast_ref::<C::Step>())
                .collect();
            Client::prepare(self, &typed).await
        })
    }
}

/// A [`Protocol`], type-erased: how scenarios find and use it. Core implements it for every
/// protocol. It is `Any`, so two declarations are told apart by their type
/// ([`same_protocol`]), never by their names.
pub trait StepProtocol: Any + Send + Sync + 'static {
    /// See [`Protocol::name`].
    fn name(&self) -> &'static str;
    /// See [`Protocol::schemes`].
    fn schemes(&self) -> &'static [&'static str];
    /// See [`Protocol::TLS_SCHEMES`].
    fn tls_schemes(&self) -> &'static [&'static str];
    /// Whether `url` is a TLS target of this protocol: its scheme is one of
    /// [`StepProtocol::tls_schemes`] (case-insensitive).
    fn is_tls(&self, url: &str) -> bool {
        url.split_once("://").is_some_and(|(scheme, _)| {
            self.tls_schemes()
                .iter()
                .any(|s| s.eq_ignore_ascii_case(scheme))
        })
    }
    /// See [`Protocol::key`].
    fn key(&self) -> &'static str;
    /// See [`Protocol::step_help`].
    fn step_help(&self) -> &'static str;
    /// See [`Protocol::check_target`].
    fn check_target(&self, url: &str) -> Result<(), String>;
    /// See [`Protocol::compile`].
    fn compile(
        &self,
        request: &Node,
        templates: &mut dyn TemplateCompiler,
    ) -> Result<Arc<dyn StepCall>, StepError>;
    /// See [`Protocol::status`].
    fn status(&self, expected: &Node) -> Result<Status, StepError>;
    /// See [`Protocol::client`].
    fn client(&self, url: &str, options: &ClientOptions) -> Result<Arc<dyn StepClient>, String>;
}

/// Whether `a` and `b` declare the same protocol: the same type, whatever their names say.
pub fn same_protocol(a: &dyn StepProtocol, b: &dyn StepProtocol) -> bool {
    let (a, b): (&dyn Any, &dyn Any) = (a, b);
    a.type_id() == b.type_id()
}

impl<P: Protocol> StepProtocol for P {
    fn name(&self) -> &'static str {
        Protocol::name(self)
    }

    fn schemes(&self) -> &'static [&'static str] {
        Protocol::schemes(self)
    }

    fn tls_schemes(&self) -> &'static [&'static str] {
        P::TLS_SCHEMES
    }

    fn key(&self) -> &'static str {
        Protocol::key(self)
    }

    fn step_help(&self) -> &'static str {
        Protocol::step_help(self)
    }

    fn check_target(&self, url: &str) -> Result<(), String> {
        Protocol::check_target(self, url)
    }

    fn compile(
        &self,
        request: &Node,
        templates: &mut dyn TemplateCompiler,
    ) -> Result<Arc<dyn StepCall>, StepError> {
        Ok(Arc::new(Protocol::compile(self, request, templates)?))
    }

    fn status(&self, expected: &Node) -> Result<Status, StepError> {
        Protocol::status(self, expected)
    }

    fn client(&self, url: &str, options: &ClientOptions) -> Result<Arc<dyn StepClient>, String> {
        Ok(Arc::new(Protocol::client(self, url, options)?))
    }
}
