//! Reading a whole file into the buffer its events will share: one allocation, filled by
//! several positioned reads at once (copying out of the page cache is a good part of a load).
use std::fs::File;
use std::mem::MaybeUninit;
use std::os::unix::fs::FileExt;
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

/// Fill `out` from `file` at `offset`; false when the file ended first.
fn fill(file: &File, mut offset: u64, mut out: &mut [u8]) -> std::io::Result<bool> {
    while !out.is_empty() {
        match file.read_at(out, offset) {
            Ok(0) => return Ok(false),
            Ok(n) => {
                out = &mut out[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
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
        .map(|(i, piece)| {
            // SAFETY: every byte is written (zeroed) before the slice is read as `u8`s
            let piece: &mut [u8] = unsafe {
                std::ptr::write_bytes(piece.as_mut_ptr(), 0, piece.len());
                &mut *(piece as *mut [MaybeUninit<u8>] as *mut [u8])
            };
            fill(&file, (i * size) as u64, piece)
        })
        .collect::<std::io::Result<Vec<bool>>>()
        .map_err(|e| read_err(path, e))?;
    if !whole.iter().all(|&w| w) {
        // the file shrank while it was read: read it again as it is now
        return std::fs::read(path)
            .map(Arc::from)
            .map_err(|e| read_err(path, e));
    }
    // SAFETY: every piece was zeroed, then filled
    Ok(unsafe { buf.assume_init() })
}
