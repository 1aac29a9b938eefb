//! The JSONL file store: a log encoded as lines ([`jsonl`]) and the store's writer: one file
//! per session, one writer per session (an exclusive lock on `<session>.lock` naming its
//! holder), appends batched and fsynced, and a check before every batch that the file is still
//! what this writer last left. A batch that cannot be written whole (a full disk, a failing
//! fsync) is cut back off: the file only ever holds complete batches.
use std::fs::{DirBuilder, File, OpenOptions, TryLockError};
use std::io::{self, ErrorKind, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub mod jsonl;

/// How often appends reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// fsync after every batch (step boundaries): the default.
    Batch,
    /// No fsync: the OS decides (tests, throwaway sessions).
    None,
}

#[derive(Debug)]
pub struct FileWriter {
    path: PathBuf,
    /// The open session file; `None` while suspended (reopened on the next write).
    file: Option<File>,
    _lock: File,
    /// Length the file must have before the next batch.
    len: u64,
    ino: u64,
    durability: Durability,
    /// A failed batch could not be cut back off: cut again before anything else is written.
    needs_cut: bool,
}

fn io_err(what: &str, path: &Path, e: io::Error) -> Error {
    Error::storage_io(format!("{what} {}: {e}", path.display()), &e)
}

/// Creating a file failed: when the folder refuses writes, say so, naming the folder.
fn create_err(what: &str, path: &Path, e: io::Error) -> Error {
    let refused = matches!(
        e.kind(),
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem
    );
    match path
        .parent()
        .filter(|d| refused && !d.as_os_str().is_empty())
    {
        Some(dir) => Error::storage_io(
            format!(
                "folder {} is not writable: {what} {}: {e}",
                dir.display(),
                path.display()
            ),
            &e,
        ),
        None => io_err(what, path, e),
    }
}

/// What writing a batch needs of a file. `File` in production; tests put a file that fails
/// (a full disk, a failing fsync) in its place.
pub trait BatchFile: Write + Seek {
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    fn sync_data(&mut self) -> io::Result<()>;
}

impl BatchFile for File {
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }
    fn sync_data(&mut self) -> io::Result<()> {
        File::sync_data(self)
    }
}

/// Why a batch was not stored.
#[derive(Debug)]
pub struct BatchFailure {
    /// `"write"` or `"fsync"`.
    pub stage: &'static str,
    pub error: io::Error,
    /// Cutting the file back to where the batch started failed too: part of it may remain.
    pub cut_error: Option<io::Error>,
}

/// Write one batch at `at` (the end of the last complete batch) and, when `durable`, fsync it.
/// On failure the file is cut back to `at`, so it never keeps part of a batch or a torn line;
/// the caller keeps the batch and may write it again.
pub fn write_batch<F: BatchFile>(
    file: &mut F,
    at: u64,
    bytes: &[u8],
    durable: bool,
) -> std::result::Result<(), BatchFailure> {
    let written = file
        .seek(SeekFrom::Start(at))
        .and_then(|_| file.write_all(bytes))
        .map_err(|e| ("write", e));
    let synced = written.and_then(|()| {
        if durable {
            file.sync_data().map_err(|e| ("fsync", e))
        } else {
            Ok(())
        }
    });
    let Err((stage, error)) = synced else {
        return Ok(());
    };
    let cut_error = file.set_len(at).err();
    if cut_error.is_none() && durable {
        // best effort: the cut is in the page cache either way, and a failing disk may refuse
        let _ = file.sync_data();
    }
    Err(BatchFailure {
        stage,
        error,
        cut_error,
    })
}

/// `pid@host` of this process.
pub fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    format!("pid {}@{host}", std::process::id())
}

/// The lock file of a session file: `<dir>/<stem>.lock`.
pub fn lock_path(path: &Path) -> PathBuf {
    path.with_extension("lock")
}

impl FileWriter {
    /// Take the session's lock and open (or create, with `header_line`) its file. Returns the
    /// writer and, when it wrote the header of a new (or empty) file, that header line. The
    /// bytes of a file that holds a log are not read here: a session opened from a checkpoint
    /// reads only what follows it (`log::checkpoint`); the caller reads what it needs under the
    /// lock.
    pub fn open(
        path: &Path,
        header_line: &str,
        durability: Durability,
    ) -> Result<(FileWriter, Option<Vec<u8>>)> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() {
                // every folder made here is private (0700), not only the last one
                DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(|e| create_err("cannot create folder", dir, e))?;
            }
        }
        let lpath = lock_path(path);
        let mut lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lpath)
            .map_err(|e| create_err("cannot open lock file", &lpath, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = lock.read_to_string(&mut holder);
                let holder = if holder.trim().is_empty() {
                    "another process".to_string()
                } else {
                    holder.trim().to_string()
                };
                return Err(Error::Locked {
                    message: format!("session {} is being written by {holder}", path.display()),
                    holder,
                });
            }
            Err(TryLockError::Error(e)) => return Err(io_err("cannot lock", &lpath, e)),
        }
        lock.set_len(0)
            .map_err(|e| io_err("cannot write lock file", &lpath, e))?;
        lock.write_all(holder_name().as_bytes())
            .map_err(|e| io_err("cannot write lock file", &lpath, e))?;

        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| create_err("cannot open session file", path, e))?;
        let meta = file
            .metadata()
            .map_err(|e| io_err("cannot stat", path, e))?;
        let mut w = FileWriter {
            path: path.to_path_buf(),
            file: Some(file),
            _lock: lock,
            len: meta.len(),
            ino: meta.ino(),
            durability,
            needs_cut: false,
        };
        if meta.len() > 0 {
            return Ok((w, None));
        }
        let mut line = header_line.as_bytes().to_vec();
        line.push(b'\n');
        w.append(&line)?;
        if durability == Durability::Batch {
            // the new file's name must survive a power cut too, not only its bytes
            sync_folder_of(path)?;
        }
        Ok((w, Some(line)))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Close the session file while keeping the lock (an idle session holds no open file: a
    /// host with thousands of open sessions would run out of descriptors). The next write opens
    /// it again, after the usual check that it is what this writer left.
    pub fn suspend(&mut self) {
        self.file = None;
    }

    fn open_file(&mut self) -> Result<&mut File> {
        if self.file.is_none() {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&self.path)
                .map_err(|e| io_err("cannot reopen session file", &self.path, e))?;
            self.file = Some(file);
        }
        Ok(self.file.as_mut().expect("opened above"))
    }

    /// Cut the file to `len` bytes (a torn tail found on open), adding a newline when the
    /// remaining last line lacks one.
    pub fn cut_to(&mut self, len: u64, add_newline: bool) -> Result<()> {
        self.open_file()?
            .set_len(len)
            .map_err(|e| io_err("cannot cut torn tail of", &self.path, e))?;
        self.len = len;
        if add_newline {
            self.append(b"\n")?;
        } else {
            self.sync()?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        if self.durability == Durability::Batch {
            self.open_file()?
                .sync_data()
                .map_err(|e| io_err("cannot fsync", &self.path, e))?;
        }
        Ok(())
    }

    /// Check the file is still the one this writer left, untouched by anyone else.
    fn check(&self) -> Result<()> {
        let meta = std::fs::metadata(&self.path).map_err(|_| {
            Error::storage(format!(
                "session file {} was deleted under its writer",
                self.path.display()
            ))
        })?;
        if meta.ino() != self.ino || meta.nlink() == 0 {
            return Err(Error::storage(format!(
                "session file {} was replaced or deleted under its writer",
                self.path.display()
            )));
        }
        if meta.len() != self.len {
            return Err(Error::storage(format!(
                "session file {} changed under its writer: {} bytes, expected {}",
                self.path.display(),
                meta.len(),
                self.len
            )));
        }
        Ok(())
    }

    /// Append one batch and make it durable. On failure the file is cut back to its last
    /// complete batch, so a failed flush never leaves part of a batch behind, and the same batch
    /// can be appended again once the cause is gone (space freed).
    pub fn append(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.needs_cut {
            let len = self.len;
            self.open_file()?
                .set_len(len)
                .map_err(|e| io_err("cannot cut a failed batch off", &self.path, e))?;
            self.needs_cut = false;
        }
        self.check()?;
        let durable = self.durability == Durability::Batch;
        let len = self.len;
        match write_batch(self.open_file()?, len, bytes, durable) {
            Ok(()) => {
                self.len += bytes.len() as u64;
                Ok(())
            }
            Err(f) => Err(self.batch_error(bytes.len(), f)),
        }
    }

    /// Replace the whole file with `bytes` (an erasure, the only rewrite the log allows:
    /// docs/log-format.md): written to a temporary file beside it, fsynced, renamed into place,
    /// the folder fsynced ([`write_new`]), all under this writer's lock. The writer goes on with
    /// the new file. On failure the file is as it was and the writer goes on with it.
    pub fn rewrite(&mut self, bytes: &[u8]) -> Result<()> {
        if self.needs_cut {
            return Err(Error::storage(format!(
                "session file {}: a failed batch is still to be cut off; flush before rewriting",
                self.path.display()
            )));
        }
        self.check()?;
        write_new(&self.path, bytes)?;
        self.file = None;
        let meta = std::fs::metadata(&self.path)
            .map_err(|e| io_err("cannot stat rewritten", &self.path, e))?;
        self.ino = meta.ino();
        self.len = meta.len();
        Ok(())
    }

    fn batch_error(&mut self, size: usize, f: BatchFailure) -> Error {
        let state = match &f.cut_error {
            None => format!(
                "nothing of it was stored (the file is back at its last complete batch, {} bytes)",
                self.len
            ),
            Some(e) => {
                self.needs_cut = true;
                format!(
                    "cutting it back to its last complete batch ({} bytes) failed too: {e}",
                    self.len
                )
            }
        };
        Error::storage_io(
            format!(
                "cannot {} a batch of {size} bytes to session file {}: {}; {state}",
                f.stage,
                self.path.display(),
                f.error
            ),
            &f.error,
        )
    }
}

/// fsync the folder holding `path`, so a file created or renamed there keeps its name after a
/// power cut.
fn sync_folder_of(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err("cannot fsync folder", dir, e))
}

/// Write a whole new file (`Session.save`): to a temporary name, fsync, then rename into place.
/// On failure the temporary file is removed and `path` is left as it was.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("jsonl.tmp");
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| create_err("cannot create", &tmp, e))?;
    let done = f
        .write_all(bytes)
        .map_err(|e| io_err("cannot write", &tmp, e))
        .and_then(|()| f.sync_all().map_err(|e| io_err("cannot fsync", &tmp, e)))
        .and_then(|()| {
            std::fs::rename(&tmp, path).map_err(|e| io_err("cannot rename into", path, e))
        })
        .and_then(|()| sync_folder_of(path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}
