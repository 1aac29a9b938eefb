//! Disk faults during a batch write: a full disk part-way through a batch, a failing fsync.
//! The file must end at its last complete batch, and the same batch must go through once the
//! fault is gone.
use std::io::{self, Cursor, Seek, SeekFrom, Write};

use foldlog_core::reader;
use foldlog_core::store::{write_batch, BatchFile};

/// An in-memory file with a size limit (a disk that fills up) and a switch that fails fsync.
struct FaultyFile {
    data: Cursor<Vec<u8>>,
    capacity: usize,
    fail_sync: bool,
    fail_cut: bool,
    syncs: usize,
}

impl FaultyFile {
    fn new(capacity: usize) -> Self {
        FaultyFile {
            data: Cursor::new(Vec::new()),
            capacity,
            fail_sync: false,
            fail_cut: false,
            syncs: 0,
        }
    }
    fn bytes(&self) -> &[u8] {
        self.data.get_ref()
    }
}

impl Write for FaultyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let pos = self.data.position() as usize;
        let room = self.capacity.saturating_sub(pos);
        if room == 0 && !buf.is_empty() {
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        // like a real disk: what fits is written before the error comes
        self.data.write(&buf[..buf.len().min(room)])
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for FaultyFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.data.seek(to)
    }
}

impl BatchFile for FaultyFile {
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        if self.fail_cut {
            return Err(io::Error::from_raw_os_error(5)); // EIO
        }
        self.data.get_mut().truncate(len as usize);
        Ok(())
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.syncs += 1;
        if self.fail_sync {
            return Err(io::Error::from_raw_os_error(5)); // EIO
        }
        Ok(())
    }
}

const HEADER: &[u8] = b"{\"type\":\"session\",\"version\":1,\"id\":\"f\",\"createdAt\":0,\"parent\":null,\"meta\":{}}\n";

fn batch(first: u64, n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for seq in first..first + n {
        out.extend_from_slice(
            format!(
                "{{\"type\":\"user/message\",\"seq\":{seq},\"time\":1,\"data\":{{\"role\":\"user\",\"content\":\"message {seq}\"}},\"surfaceOp\":\"append\"}}\n"
            )
            .as_bytes(),
        );
    }
    out
}

fn events_in(bytes: &[u8]) -> usize {
    let loaded = reader::read(bytes).expect("the file loads");
    assert!(loaded.torn.is_none(), "no torn line is ever left");
    loaded.log.len()
}

#[test]
fn a_full_disk_mid_batch_leaves_the_last_complete_batch_and_the_batch_can_be_retried() {
    let first = [HEADER, &batch(0, 3)].concat();
    let second = batch(3, 4);
    // the disk fills at every byte of the second batch (and just before it)
    for room in 0..second.len() {
        let mut f = FaultyFile::new(first.len() + room);
        write_batch(&mut f, 0, &first, true).expect("the first batch fits");
        let err = write_batch(&mut f, first.len() as u64, &second, true).unwrap_err();
        assert_eq!(err.stage, "write");
        assert_eq!(err.error.raw_os_error(), Some(28));
        assert!(err.cut_error.is_none());
        assert_eq!(
            f.bytes(),
            &first[..],
            "room {room}: cut back to the first batch"
        );
        assert_eq!(events_in(f.bytes()), 3);
        // space freed: the same batch goes through whole
        f.capacity = usize::MAX;
        write_batch(&mut f, first.len() as u64, &second, true).expect("retry after space is freed");
        assert_eq!(events_in(f.bytes()), 7);
    }
}

#[test]
fn a_failing_fsync_cuts_the_batch_off() {
    let first = [HEADER, &batch(0, 2)].concat();
    let mut f = FaultyFile::new(usize::MAX);
    write_batch(&mut f, 0, &first, true).unwrap();
    f.fail_sync = true;
    let err = write_batch(&mut f, first.len() as u64, &batch(2, 5), true).unwrap_err();
    assert_eq!(err.stage, "fsync");
    assert_eq!(
        f.bytes(),
        &first[..],
        "a batch that was not made durable is not kept"
    );
    f.fail_sync = false;
    write_batch(&mut f, first.len() as u64, &batch(2, 5), true).unwrap();
    assert_eq!(events_in(f.bytes()), 7);
}

#[test]
fn no_fsync_without_durability() {
    let mut f = FaultyFile::new(usize::MAX);
    f.fail_sync = true;
    write_batch(&mut f, 0, &[HEADER, &batch(0, 1)].concat(), false).expect("fsync is not called");
    assert_eq!(f.syncs, 0);
}

#[test]
fn a_failed_cut_is_reported() {
    let first = [HEADER, &batch(0, 1)].concat();
    let mut f = FaultyFile::new(first.len() + 10);
    write_batch(&mut f, 0, &first, true).unwrap();
    f.fail_cut = true;
    let err = write_batch(&mut f, first.len() as u64, &batch(1, 2), true).unwrap_err();
    assert_eq!(err.stage, "write");
    assert!(
        err.cut_error.is_some(),
        "the caller learns part of the batch may remain"
    );
}
