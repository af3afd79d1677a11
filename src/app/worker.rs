//! The one background worker every analysis view uses: a view sends requests, the worker runs
//! only the newest (older ones still queued are skipped, the running one is cancelled), and a
//! reply to anything but the newest request is dropped, so a stale result is never shown as
//! current. The worker keeps its own state between requests (caches, GPU kernels) inside the
//! compute closure, and is joined when the view drops it, so it never outlives the view while
//! inside the GPU driver (a detached worker still in lavapipe at exit crashed the process).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::time::Instant;

use eframe::egui;

/// What a running computation sees: whether it was cancelled, and a counter it may advance
/// to show progress.
pub struct Progress {
    pub cancel: Arc<AtomicBool>,
    pub done: Arc<AtomicUsize>,
}

impl Progress {
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}

/// A view's computation: `Ok(None)` when it stopped because it was cancelled.
pub type Compute<Req, Out> = Box<dyn FnMut(&Req, &Progress) -> Result<Option<Out>, String> + Send>;

/// What comes back for the newest request.
pub enum Outcome<Req, Out> {
    Done { request: Req, output: Out },
    Failed { request: Req, message: String },
}

struct Job<Req> {
    id: u64,
    request: Req,
    cancel: Arc<AtomicBool>,
}

struct Reply<Out> {
    id: u64,
    result: Result<Out, String>,
}

struct Thread<Req, Out> {
    tx: Option<Sender<Job<Req>>>,
    rx: Receiver<Reply<Out>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl<Req, Out> Drop for Thread<Req, Out> {
    fn drop(&mut self) {
        // Closing the channel ends the worker's loop.
        self.tx = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The newest request sent and not yet answered.
pub struct Pending<Req> {
    pub id: u64,
    pub request: Req,
    pub since: Instant,
    cancel: Arc<AtomicBool>,
}

pub struct Worker<Req, Out> {
    name: String,
    make: Arc<dyn Fn() -> Compute<Req, Out> + Send + Sync>,
    thread: Option<Thread<Req, Out>>,
    next_id: u64,
    pending: Option<Pending<Req>>,
    last: Option<Req>,
    done: Arc<AtomicUsize>,
}

impl<Req, Out> Worker<Req, Out>
where
    Req: Clone + PartialEq + Send + 'static,
    Out: Send + 'static,
{
    /// `make` builds the computation on the worker thread (once, and again after a panic).
    pub fn new(
        name: impl Into<String>,
        make: impl Fn() -> Compute<Req, Out> + Send + Sync + 'static,
    ) -> Self {
        Worker {
            name: name.into(),
            make: Arc::new(make),
            thread: None,
            next_id: 0,
            pending: None,
            last: None,
            done: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A worker whose computation `make` builds from the open recording and the GPU.
    pub fn on_recording(
        name: impl Into<String>,
        rec: &Arc<crate::recording::Recording>,
        gpu: &Option<crate::gpu::GpuContext>,
        make: fn(
            Arc<crate::recording::Recording>,
            Option<crate::gpu::GpuContext>,
        ) -> Compute<Req, Out>,
    ) -> Self {
        let (rec, gpu) = (rec.clone(), gpu.clone());
        Worker::new(name, move || make(rec.clone(), gpu.clone()))
    }

    fn spawn(&self, repaint: egui::Context) -> Thread<Req, Out> {
        let (tx, jobs) = channel::<Job<Req>>();
        let (replies, rx) = channel();
        let make = self.make.clone();
        let done = self.done.clone();
        let handle = std::thread::Builder::new()
            .name(self.name.clone())
            .spawn(move || {
                let mut compute = make();
                while let Ok(mut job) = jobs.recv() {
                    while let Ok(newer) = jobs.try_recv() {
                        job = newer;
                    }
                    if job.cancel.load(Ordering::Relaxed) {
                        continue;
                    }
                    done.store(0, Ordering::Relaxed);
                    let progress = Progress {
                        cancel: job.cancel.clone(),
                        done: done.clone(),
                    };
                    let result = match compute(&job.request, &progress) {
                        Ok(Some(out)) => Ok(out),
                        Ok(None) => continue,
                        Err(e) => Err(e),
                    };
                    if replies.send(Reply { id: job.id, result }).is_err() {
                        break;
                    }
                    repaint.request_repaint();
                }
            })
            .expect("the worker thread starts");
        Thread {
            tx: Some(tx),
            rx,
            handle: Some(handle),
        }
    }

    /// Sends `request` unless it equals the last one sent, cancelling the one running. True
    /// when it was sent.
    pub fn request(&mut self, ctx: &egui::Context, request: Req) -> bool {
        if self.last.as_ref() == Some(&request) {
            return false;
        }
        self.last = Some(request.clone());
        self.cancel();
        if self.thread.is_none() {
            self.thread = Some(self.spawn(ctx.clone()));
        }
        let tx = self.thread.as_ref().and_then(|t| t.tx.as_ref());
        self.next_id += 1;
        let cancel = Arc::new(AtomicBool::new(false));
        let job = Job {
            id: self.next_id,
            request: request.clone(),
            cancel: cancel.clone(),
        };
        if tx.is_some_and(|tx| tx.send(job).is_ok()) {
            self.pending = Some(Pending {
                id: self.next_id,
                request,
                since: Instant::now(),
                cancel,
            });
            true
        } else {
            false
        }
    }

    /// Sends `request` where it could be made; where it could not (a setting out of range),
    /// cancels the running one and returns why, to be shown instead of a result.
    pub fn request_or_refuse(
        &mut self,
        ctx: &egui::Context,
        request: Result<Req, String>,
    ) -> Option<String> {
        match request {
            Ok(req) => {
                self.request(ctx, req);
                None
            }
            Err(e) => {
                self.cancel();
                self.forget();
                Some(e)
            }
        }
    }

    /// Forgets the last request, so that the same one is sent again (a retry, or inputs that
    /// changed behind an equal request).
    pub fn forget(&mut self) {
        self.last = None;
    }

    /// Cancels the running request; nothing more will be shown for it.
    pub fn cancel(&mut self) {
        if let Some(p) = self.pending.take() {
            p.cancel.store(true, Ordering::Relaxed);
        }
    }

    pub fn pending(&self) -> Option<&Pending<Req>> {
        self.pending.as_ref()
    }

    /// The progress counter of the running request.
    pub fn progress(&self) -> usize {
        self.done.load(Ordering::Relaxed)
    }

    /// The outcome for the newest request, once it arrives; older replies are dropped.
    pub fn poll(&mut self) -> Option<Outcome<Req, Out>> {
        let thread = self.thread.as_ref()?;
        let mut newest = None;
        loop {
            match thread.rx.try_recv() {
                Ok(reply) if self.pending.as_ref().is_some_and(|p| p.id == reply.id) => {
                    newest = Some(reply)
                }
                Ok(_) => {}
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    // The worker died (a panic): say so; a new one starts with the next request.
                    self.thread = None;
                    self.last = None;
                    let p = self.pending.take()?;
                    return Some(Outcome::Failed {
                        request: p.request,
                        message: "the analysis stopped unexpectedly; change a setting to retry"
                            .into(),
                    });
                }
            }
        }
        let reply = newest?;
        let p = self.pending.take()?;
        Some(match reply.result {
            Ok(output) => Outcome::Done {
                request: p.request,
                output,
            },
            Err(message) => Outcome::Failed {
                request: p.request,
                message,
            },
        })
    }

    /// Cancel (a button beside the spinner): the request stays the last one, so it is not
    /// sent again until a setting changes.
    pub fn spinner(&mut self, ui: &mut egui::Ui, unit: &str) {
        let Some(p) = &self.pending else {
            return;
        };
        let mut cancel = false;
        ui.horizontal(|ui| {
            ui.spinner();
            ui.label(format!(
                "computing… {:.1} s",
                p.since.elapsed().as_secs_f64()
            ));
            let done = self.progress();
            if done > 0 {
                ui.label(format!("{done} {unit}"));
            }
            cancel = ui.button("Cancel").clicked();
        });
        if cancel {
            self.cancel();
        }
        ui.ctx()
            .request_repaint_after(std::time::Duration::from_millis(50));
    }
}

impl<Req, Out> Drop for Worker<Req, Out> {
    /// A run still going is cancelled so that joining the thread is quick.
    fn drop(&mut self) {
        if let Some(p) = &self.pending {
            p.cancel.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests sent faster than they finish: only the newest comes back, and an equal request
    /// is not sent twice.
    #[test]
    fn the_newest_request_wins() {
        let ctx = egui::Context::default();
        let mut w: Worker<u32, u32> = Worker::new("test", || {
            Box::new(|r: &u32, p: &Progress| {
                for _ in 0..20 {
                    if p.cancelled() {
                        return Ok(None);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                if *r == 13 {
                    Err("unlucky".into())
                } else {
                    Ok(Some(r * 10))
                }
            })
        });
        for r in 1..=5 {
            assert!(w.request(&ctx, r));
        }
        assert!(!w.request(&ctx, 5));
        let outcome = loop {
            if let Some(o) = w.poll() {
                break o;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        };
        assert!(matches!(
            outcome,
            Outcome::Done {
                request: 5,
                output: 50
            }
        ));
        assert!(w.pending().is_none());
        w.request(&ctx, 13);
        let outcome = loop {
            if let Some(o) = w.poll() {
                break o;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        };
        assert!(matches!(outcome, Outcome::Failed { request: 13, .. }));
    }
}
