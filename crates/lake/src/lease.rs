//! One writer at a time: the lake's write lease `_cxrlake/lease.json`. A command that writes
//! (`run`, `ingest`, `import`, `ratings add`, `demo`) takes it with an atomic create-if-absent
//! put and renews a heartbeat in it while it runs; a second writer is refused with who holds the
//! lake and since when, so two concurrent runs can never both append (which doubled `qa`). A
//! lease whose heartbeat is older than the stale time (its holder was killed) is taken over.
//!
//! ```text
//!  acquire ── put(Create) ok ──► held; heartbeat every stale/4; release deletes it
//!          └─ exists: fresh ──► LakeError::Busy      stale ──► delete, put(Create) again
//! ```
//!
//! Readers (`sql`, `status`, `plan`, exports) take no lease. On an object store without
//! conditional puts the create falls back to check-then-put (a narrow race, logged).

use std::time::Duration;

use chrono::{DateTime, Utc};
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;

use crate::error::{LakeError, Result};
use crate::lake::Lake;

/// Minutes without a heartbeat after which a lease counts as abandoned.
pub const STALE_AFTER: Duration = Duration::from_secs(10 * 60);

/// Attempts to create the lease file before giving up: a lease released between our failed
/// create and our read is tried again, a stale one taken over at most three times.
const LEASE_TRIES: usize = 20;

/// The lease file's content.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LeaseRecord {
    /// Random id of this holding.
    pub token: String,
    /// The holder's command (`run`, `ingest`, …).
    pub command: String,
    /// The holder's process id.
    pub pid: u32,
    /// The holder's host name.
    pub host: String,
    /// When the lease was taken (RFC 3339).
    pub since: String,
    /// The last heartbeat (RFC 3339).
    pub heartbeat: String,
}

/// A held write lease; [`Lease::release`] gives it back (a dropped lease stops its heartbeat and
/// expires after the stale time).
#[derive(Debug)]
pub struct Lease {
    lake: Lake,
    path: Path,
    token: String,
    heartbeat: JoinHandle<()>,
}

/// Whether process `pid` runs on this machine (Linux: `/proc/<pid>`; elsewhere assumed alive, so
/// only the stale time frees its lease).
fn process_alive(pid: u32) -> bool {
    let proc = std::path::Path::new("/proc");
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown host".into())
}

impl Lake {
    fn lease_path(&self) -> Path {
        self.meta_path("lease.json")
    }

    /// Takes the lake's write lease for `command`, or fails with [`LakeError::Busy`] naming the
    /// holder; a lease with no heartbeat for `stale_after` is taken over.
    pub async fn acquire_lease(&self, command: &str, stale_after: Duration) -> Result<Lease> {
        let path = self.lease_path();
        let now = Utc::now().to_rfc3339();
        let record = LeaseRecord {
            token: uuid::Uuid::new_v4().to_string(),
            command: command.to_string(),
            pid: std::process::id(),
            host: host(),
            since: now.clone(),
            heartbeat: now,
        };
        let body = serde_json::to_vec_pretty(&record)?;
        let mut holder = None;
        let mut taken_over = 0;
        for _ in 0..LEASE_TRIES {
            let created = self
                .store()
                .put_opts(
                    &path,
                    PutPayload::from(body.clone()),
                    PutOptions::from(PutMode::Create),
                )
                .await;
            match created {
                Ok(_) => return Ok(self.held(path, record, stale_after)),
                Err(object_store::Error::AlreadyExists { .. }) => {}
                Err(object_store::Error::NotImplemented { .. }) => {
                    tracing::warn!(
                        "the object store has no conditional put: lease by check-then-put"
                    );
                    if self.read_lease(&path).await?.is_none() {
                        self.store()
                            .put(&path, PutPayload::from(body.clone()))
                            .await?;
                        return Ok(self.held(path, record, stale_after));
                    }
                }
                Err(err) => return Err(err.into()),
            }
            let Some(current) = self.read_lease(&path).await? else {
                continue; // released meanwhile
            };
            let beat = DateTime::parse_from_rfc3339(&current.heartbeat)
                .map(|t| t.with_timezone(&Utc))
                .unwrap_or(DateTime::<Utc>::MIN_UTC);
            let silent = (Utc::now() - beat).to_std().unwrap_or_default();
            let gone = current.host == record.host && !process_alive(current.pid);
            if silent < stale_after && !gone {
                holder = Some(current);
                break;
            }
            tracing::warn!(
                holder = current.command,
                pid = current.pid,
                host = current.host,
                "taking over a write lease whose holder is gone or silent since {}",
                current.heartbeat
            );
            self.store().delete(&path).await.or_else(|err| match err {
                object_store::Error::NotFound { .. } => Ok(()),
                err => Err(err),
            })?;
            holder = Some(current);
            taken_over += 1;
            if taken_over == 3 {
                break;
            }
        }
        // A live holder, or (three takeovers lost to other writers) the last one seen; never
        // this command itself.
        match holder {
            Some(holder) => Err(LakeError::Busy {
                root: self.root().to_string(),
                holder: Box::new(holder),
                stale_minutes: stale_after.as_secs().div_ceil(60),
                path: self.lease_location(),
            }),
            None => Err(LakeError::Contended {
                path: self.lease_location(),
                tries: LEASE_TRIES,
            }),
        }
    }

    /// The lease file's URL, for messages.
    fn lease_location(&self) -> String {
        let root = self.root().as_str().trim_end_matches('/');
        format!("{root}/_cxrlake/lease.json")
    }

    /// The current lease, if any (a malformed file counts as stale).
    pub async fn read_lease(&self, path: &Path) -> Result<Option<LeaseRecord>> {
        match self.store().get(path).await {
            Ok(found) => {
                let bytes = found.bytes().await?;
                Ok(Some(serde_json::from_slice(&bytes).unwrap_or(
                    LeaseRecord {
                        token: String::new(),
                        command: "unknown (unreadable lease file)".into(),
                        pid: 0,
                        host: "unknown".into(),
                        since: String::new(),
                        heartbeat: String::new(),
                    },
                )))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    fn held(&self, path: Path, record: LeaseRecord, stale_after: Duration) -> Lease {
        let token = record.token.clone();
        let lake = self.clone();
        let beat_path = path.clone();
        let every = (stale_after / 4).max(Duration::from_millis(50));
        let heartbeat = tokio::spawn(async move {
            let mut record = record;
            loop {
                tokio::time::sleep(every).await;
                match lake.read_lease(&beat_path).await {
                    Ok(Some(current)) if current.token == record.token => {}
                    _ => return, // released or taken over
                }
                record.heartbeat = Utc::now().to_rfc3339();
                let Ok(body) = serde_json::to_vec_pretty(&record) else {
                    return;
                };
                if let Err(err) = lake.store().put(&beat_path, PutPayload::from(body)).await {
                    tracing::warn!("cannot renew the lake's write lease: {err}");
                }
            }
        });
        Lease {
            lake: self.clone(),
            path,
            token,
            heartbeat,
        }
    }
}

impl Lease {
    /// Gives the lease back: stops the heartbeat and deletes the lease file if it is still this
    /// holding's.
    pub async fn release(self) -> Result<()> {
        self.heartbeat.abort();
        if let Some(current) = self.lake.read_lease(&self.path).await?
            && current.token == self.token
        {
            match self.lake.store().delete(&self.path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(())
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_writer_at_a_time_and_a_silent_holder_is_taken_over() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lake = Lake::open_url(dir.path().to_str().expect("utf8")).expect("open");
        lake.init().await.expect("init");
        let first = lake.acquire_lease("run", STALE_AFTER).await.expect("first");
        let busy = lake
            .acquire_lease("ingest", STALE_AFTER)
            .await
            .expect_err("second writer")
            .to_string();
        assert!(
            busy.contains("another cxrlake command (`run`, pid") && busy.contains("lease.json"),
            "{busy}"
        );
        first.release().await.expect("release");
        let second = lake
            .acquire_lease("ingest", STALE_AFTER)
            .await
            .expect("free again");
        // The heartbeat keeps a lease fresh past its stale time.
        second.release().await.expect("release");
        // Wide enough margins for a loaded machine (two test processes on two cores).
        let short = Duration::from_millis(1_500);
        let held = lake.acquire_lease("run", short).await.expect("held");
        tokio::time::sleep(Duration::from_millis(3_500)).await;
        assert!(
            lake.acquire_lease("ingest", short).await.is_err(),
            "renewed"
        );
        // A holder on this host whose process is gone is taken over at once.
        let record = LeaseRecord {
            token: "gone".into(),
            command: "run".into(),
            pid: u32::MAX - 1,
            host: host(),
            since: Utc::now().to_rfc3339(),
            heartbeat: Utc::now().to_rfc3339(),
        };
        held.heartbeat.abort();
        let body = serde_json::to_vec(&record).expect("json");
        lake.store()
            .put(&lake.lease_path(), PutPayload::from(body))
            .await
            .expect("forge");
        let taken = lake
            .acquire_lease("run", STALE_AFTER)
            .await
            .expect("holder gone");
        taken.release().await.expect("release");
        let held = lake.acquire_lease("run", short).await.expect("held again");
        // A holder that stopped beating (killed elsewhere) is taken over after the stale time.
        held.heartbeat.abort();
        tokio::time::sleep(short + Duration::from_millis(500)).await;
        let taken = lake
            .acquire_lease("ingest", short)
            .await
            .expect("taken over");
        let record = lake
            .read_lease(&lake.lease_path())
            .await
            .expect("read")
            .expect("held");
        assert_eq!(record.command, "ingest");
        taken.release().await.expect("release");
        assert!(
            lake.read_lease(&lake.lease_path())
                .await
                .expect("read")
                .is_none()
        );
    }
}
