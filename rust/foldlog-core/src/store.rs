//! The JSONL file store's writer: one file per session, one writer per session (an exclusive
//! lock on `<session>.lock` naming its holder), appends batched and fsynced, and a check before
//! every batch that the file is still what this writer last left.
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

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
    file: File,
    _lock: File,
    /// Length the file must have before the next batch.
    len: u64,
    ino: u64,
    durability: Durability,
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::storage(format!("{what} {}: {e}", path.display()))
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
    /// writer and the bytes the file holds now, to be read into the log.
    pub fn open(
        path: &Path,
        header_line: &str,
        durability: Durability,
    ) -> Result<(FileWriter, Vec<u8>)> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() {
                std::fs::create_dir_all(dir).map_err(|e| io_err("cannot create folder", dir, e))?;
                let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
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
            .map_err(|e| io_err("cannot open lock file", &lpath, e))?;
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

        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| io_err("cannot open session file", path, e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| io_err("cannot read session file", path, e))?;
        let meta = file
            .metadata()
            .map_err(|e| io_err("cannot stat", path, e))?;
        let mut w = FileWriter {
            path: path.to_path_buf(),
            file,
            _lock: lock,
            len: meta.len(),
            ino: meta.ino(),
            durability,
        };
        if bytes.is_empty() {
            let mut line = header_line.as_bytes().to_vec();
            line.push(b'\n');
            w.append(&line)?;
            bytes = line;
        }
        Ok((w, bytes))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Cut the file to `len` bytes (a torn tail found on open), adding a newline when the
    /// remaining last line lacks one.
    pub fn cut_to(&mut self, len: u64, add_newline: bool) -> Result<()> {
        self.file
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
            self.file
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
    /// complete batch, so a failed flush never leaves half a batch behind.
    pub fn append(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.check()?;
        let result = self
            .file
            .seek(SeekFrom::Start(self.len))
            .and_then(|_| self.file.write_all(bytes))
            .map_err(|e| io_err("cannot write", &self.path, e))
            .and_then(|_| self.sync());
        match result {
            Ok(()) => {
                self.len += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                let _ = self.file.set_len(self.len);
                Err(e)
            }
        }
    }
}

/// Write a whole new file (`Session.save`): to a temporary name, fsync, then rename into place.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("jsonl.tmp");
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| io_err("cannot create", &tmp, e))?;
    f.write_all(bytes)
        .map_err(|e| io_err("cannot write", &tmp, e))?;
    f.sync_all().map_err(|e| io_err("cannot fsync", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io_err("cannot rename into", path, e))?;
    Ok(())
}
