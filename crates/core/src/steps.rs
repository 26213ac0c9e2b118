//! A client's steps as a whole plan: what `throng run URL` runs, for every protocol. One step
//! (an HTTP request, a gRPC call) or several (SQL's statements), optionally with a row over
//! them all (a transaction, a sysbench workload), and run again from the first when a step's
//! failure undid them ([`Outcome::again`]: retries are data an outcome carries, not a driver's
//! code). Typed on the protocol's [`Client`], so a URL run pays for no erasure and no boxed
//! future; no protocol writes a [`crate::Driver`] of its own.

use std::fmt;

use crate::step::{Client, Render, Reply, StaticOnly, StepError};
use crate::{DriverReport, ErrorClass, GroupInfo, Outcome, PartsInfo, SetupError, StepInfo};

/// Steps of one protocol's client as a whole plan. Their templates, if they have any
/// (`-d '{"id": {{ seq() }}}'`), are rendered per call by `R`; steps without any have the
/// default [`StaticOnly`], which renders nothing.
pub struct Steps<C: Client, R = StaticOnly> {
    client: C,
    steps: Vec<(String, C::Step)>,
    /// A row over every step (a transaction), by its label.
    group: Option<String>,
    render: R,
    /// Checked against the target by their maker already ([`Steps::checked`]).
    checked: bool,
}

/// A user's session of a [`Steps`] plan: the client's own, and whether the last step's
/// failure undid the steps so far, which then run again from the first.
#[derive(Debug)]
pub struct Session<S> {
    /// The client's session.
    pub inner: S,
    again: bool,
}

impl<C: Client, R> fmt::Debug for Steps<C, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Steps")
            .field("steps", &self.steps)
            .field("group", &self.group)
            .finish_non_exhaustive()
    }
}

impl<C: Client> Steps<C> {
    /// One step of `client`, labelled `label`, checked against what the client knows (see
    /// [`Client::check`]).
    pub fn new(client: C, step: C::Step, label: impl Into<String>) -> Result<Self, StepError> {
        Steps::of(client, vec![(label.into(), step)])
    }

    /// Steps of `client`, each with its label, in order; each checked (see [`Client::check`]).
    pub fn of(client: C, steps: Vec<(String, C::Step)>) -> Result<Self, StepError> {
        for (_, step) in &steps {
            client.check(step)?;
        }
        Ok(Steps {
            client,
            steps,
            group: None,
            render: StaticOnly,
            checked: false,
        })
    }
}

impl<C: Client, R> Steps<C, R> {
    /// The same steps with a row of their own over all of them, labelled `label` (a
    /// transaction): each pass through the steps is one sample of it.
    pub fn grouped(mut self, label: impl Into<String>) -> Self {
        self.group = Some(label.into());
        self
    }

    /// The same steps with the first's row labelled `label` (a URL run's `--label`).
    pub fn labelled(mut self, label: impl Into<String>) -> Self {
        if let Some((l, _)) = self.steps.first_mut() {
            *l = label.into();
        }
        self
    }

    /// The same steps, checked against their target already by whoever made them (SQL's
    /// check before the load prepares each statement to bind its parameters): the driver's
    /// prepare does not do it again (a second connection, and statements the database's own
    /// counters would show as the load's).
    pub fn checked(mut self) -> Self {
        self.checked = true;
        self
    }

    /// The same steps with their templates rendered per call by `render`.
    pub fn rendered_by<S: Render>(self, render: S) -> Steps<C, S> {
        Steps {
            client: self.client,
            steps: self.steps,
            group: self.group,
            render,
            checked: self.checked,
        }
    }

    /// The client.
    pub fn client(&self) -> &C {
        &self.client
    }

    /// The first step.
    pub fn step(&self) -> Option<&C::Step> {
        self.steps.first().map(|(_, s)| s)
    }

    /// The row labels: the steps', then the group's if there is one.
    pub fn labels(&self) -> Vec<String> {
        let steps = self.steps.iter().map(|(l, _)| l.clone());
        steps.chain(self.group.clone()).collect()
    }
}

impl<C: Client, R: Render> Steps<C, R> {
    /// Sends the first step once on `session` (see [`crate::Driver::session`]), with the
    /// reply when `want_reply`: for a caller that reads what came back.
    pub async fn send(
        &self,
        session: &mut Session<C::Session>,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        match self.steps.first() {
            Some((_, step)) => {
                self.client
                    .call(&mut session.inner, step, &self.render, want_reply)
                    .await
            }
            None => (Outcome::failed(ErrorClass::Other, "no step to send"), None),
        }
    }
}

impl<C: Client, R: Render + Send + Sync + 'static> crate::Driver for Steps<C, R> {
    type Worker = C::Worker;
    type Session = Session<C::Session>;

    fn steps(&self) -> Vec<StepInfo> {
        self.steps
            .iter()
            .map(|(label, _)| StepInfo {
                label: label.clone(),
            })
            .collect()
    }

    fn groups(&self) -> Vec<GroupInfo> {
        self.group
            .iter()
            .map(|label| GroupInfo {
                label: label.clone(),
                first: 0,
                last: self.steps.len().saturating_sub(1),
            })
            .collect()
    }

    fn parts(&self) -> Vec<PartsInfo> {
        self.steps
            .iter()
            .enumerate()
            .filter_map(|(i, (label, step))| {
                let label = self.client.parts(step, label)?;
                Some(PartsInfo { label, step: i })
            })
            .collect()
    }

    fn worker(&self) -> C::Worker {
        self.client.worker_of(0, 1)
    }

    fn worker_of(&self, index: usize, workers: usize) -> C::Worker {
        self.client.worker_of(index, workers)
    }

    fn session(&self, worker: &C::Worker, user: u64) -> Self::Session {
        Session {
            inner: self.client.session(worker, user),
            again: false,
        }
    }

    /// The client's check of every step against its target ([`Client::prepare`]: SQL's
    /// statements each prepared once), as a scenario's driver does it for each target's steps;
    /// none for steps made [`Steps::checked`].
    async fn prepare(&self) -> Result<(), SetupError> {
        if self.checked {
            return Ok(());
        }
        let steps: Vec<&C::Step> = self.steps.iter().map(|(_, s)| s).collect();
        self.client
            .prepare(&steps)
            .await
            .map_err(|e| SetupError(e.message))
    }

    async fn connect(&self, session: &mut Self::Session, _step: usize) -> Result<(), Outcome> {
        self.client.connect(&mut session.inner).await
    }

    /// In order; after a failure that undid the steps so far ([`Outcome::again`]), the first
    /// again.
    fn next_step(&self, session: &mut Self::Session, after: Option<usize>) -> Option<usize> {
        match (after, std::mem::take(&mut session.again)) {
            (Some(_), true) => Some(0),
            (after, _) => Some(after.map_or(0, |a| a + 1)),
        }
    }

    async fn execute(&self, session: &mut Self::Session, step: usize) -> Outcome {
        let Some((_, st)) = self.steps.get(step) else {
            return Outcome::failed(ErrorClass::Other, format!("no step {step}"));
        };
        let outcome = self
            .client
            .call(&mut session.inner, st, &self.render, false)
            .await
            .0;
        session.again = outcome.again;
        outcome
    }

    fn report(&self) -> DriverReport {
        self.client.report()
    }

    async fn end_iteration(&self, session: &mut Self::Session, failed: Option<ErrorClass>) {
        self.client.end_iteration(&mut session.inner, failed).await;
    }

    async fn close(&self, session: &mut Self::Session) {
        self.client.close(&mut session.inner).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::step::Place;
    use crate::Driver;

    /// Records the steps each prepare is given; a step `bad` does not prepare.
    #[derive(Default)]
    struct Preparing {
        prepared: Mutex<Vec<Vec<&'static str>>>,
    }

    impl Client for Preparing {
        type Step = &'static str;
        type Worker = ();
        type Session = ();

        fn worker_of(&self, _index: usize, _workers: usize) {}

        fn session(&self, _worker: &(), _user: u64) {}

        async fn call(
            &self,
            _session: &mut (),
            _step: &&'static str,
            _render: &dyn Render,
            _want_reply: bool,
        ) -> (Outcome, Option<Reply>) {
            (Outcome::default(), None)
        }

        async fn prepare(&self, steps: &[&&'static str]) -> Result<(), StepError> {
            let steps: Vec<&'static str> = steps.iter().map(|s| **s).collect();
            let bad = steps.contains(&"bad");
            self.prepared.lock().unwrap().push(steps);
            match bad {
                true => Err(StepError::at(Place::default(), "`bad` does not prepare")),
                false => Ok(()),
            }
        }
    }

    /// The driver's prepare is the client's, given every step once, in order (a URL run's
    /// steps were not prepared at all when `Steps` left it to the default); its refusal stops
    /// the run with the client's message. Steps their maker checked are not prepared again.
    #[tokio::test]
    async fn prepare_hands_every_step_to_the_client_once() {
        let steps = vec![("read".into(), "select"), ("write".into(), "update")];
        let plan = Steps::of(Preparing::default(), steps)
            .unwrap()
            .grouped("transaction");
        plan.prepare().await.unwrap();
        assert_eq!(
            *plan.client().prepared.lock().unwrap(),
            [["select", "update"]]
        );
        let bad = Steps::new(Preparing::default(), "bad", "bad").unwrap();
        let e = bad.prepare().await.unwrap_err();
        assert_eq!(e, SetupError("`bad` does not prepare".into()));
        assert_eq!(bad.client().prepared.lock().unwrap().len(), 1);
        let checked = Steps::new(Preparing::default(), "bad", "bad")
            .unwrap()
            .checked();
        checked.prepare().await.unwrap();
        assert!(checked.client().prepared.lock().unwrap().is_empty());
    }
}
