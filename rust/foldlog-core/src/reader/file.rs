//! Reading a whole file into the buffer its events will share: one allocation, filled by
//! several positioned reads at once (copying out of the page cache is a good part of a load).
use std::fs::File;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::event::Buffer;

/// Pieces smaller than this are read by one thread.
const MIN_PIECE: usize = 4 << 20;

fn read_err(path: &Path, e: std::io::Error) -> Error {
    Error::storage_io(format!("cannot read {}: {e}", path.display()), &e)
}

/// Fill `out` from `file` at `offset`; false when the file ended first. `out` may be
/// uninitialised: the kernel writes it (`pread`) and nothing here reads it, so the buffer is not
/// zeroed first (a pass over every byte of the file, for nothing).
fn fill(file: &File, mut offset: u64, out: &mut [MaybeUninit<u8>]) -> std::io::Result<bool> {
    let mut done = 0;
    while done < out.len() {
        let rest = &mut out[done..];
        // SAFETY: `rest` is valid for `rest.len()` bytes of writes, and the fd is open
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                rest.as_mut_ptr().cast::<libc::c_void>(),
                rest.len(),
                offset as libc::off_t,
            )
        };
        match n {
            0 => return Ok(false),
            n if n > 0 => {
                done += n as usize;
                offset += n as u64;
            }
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(true)
}

/// Ask for huge pages under a large buffer that is about to be written: a 100 MB log then
/// faults in ~50 pages instead of ~25,000 (where the system allows it; a hint, never an error).
pub(crate) fn huge_pages<T>(buf: &mut [T]) {
    const HUGE: usize = 2 << 20;
    let bytes = std::mem::size_of_val(buf);
    if bytes < 4 * HUGE {
        return;
    }
    let start = (buf.as_mut_ptr() as usize).next_multiple_of(HUGE);
    let end = (buf.as_mut_ptr() as usize + bytes) / HUGE * HUGE;
    if end > start {
        // SAFETY: the range lies inside `buf`, which this function borrows mutably
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// The bytes of the file at `path` (as long as it was when opened).
pub(super) fn read(path: &Path) -> Result<Buffer> {
    let file = File::open(path).map_err(|e| read_err(path, e))?;
    let len = file.metadata().map_err(|e| read_err(path, e))?.len() as usize;
    let mut buf = Arc::<[u8]>::new_uninit_slice(len);
    let slots = Arc::get_mut(&mut buf).expect("a new buffer has one owner");
    huge_pages(slots);
    let pieces = (len / MIN_PIECE).clamp(1, rayon::current_num_threads());
    let size = len.div_ceil(pieces).max(1);
    let whole = slots
        .par_chunks_mut(size)
        .enumerate()
        .map(|(i, piece)| fill(&file, (i * size) as u64, piece))
        .collect::<std::io::Result<Vec<bool>>>()
        .map_err(|e| read_err(path, e))?;
    if !whole.iter().all(|&w| w) {
        // the file shrank while it was read: read it again as it is now
        return std::fs::read(path)
            .map(Arc::from)
            .map_err(|e| read_err(path, e));
    }
    // SAFETY: every piece was filled whole (a piece that was not sent us to the read above)
    Ok(unsafe { buf.assume_init() })
}
