//! Pipes: a bigger kernel buffer for streaming through standard input and
//! output (a leaf module: the loaders and the writers both use it).

/// Asks the kernel for a 1 MiB buffer on the pipe at file descriptor `fd`
/// (standard input or output, or one `record --analyze` makes), when it is
/// one: with the default 64 KiB, a
/// generator and an analyzer streaming hundreds of MB/s through it wake each
/// other every few thousand events. Best effort: nothing happens elsewhere.
pub fn grow_pipe(fd: i32) {
    #[cfg(target_os = "linux")]
    // SAFETY: `libc::stat` is plain data, valid when all zero; `fstat` writes
    // into it through a pointer to that live local; `fcntl` takes only
    // integers. An invalid or non-pipe descriptor makes either return an
    // error, which is ignored: nothing is read from `st` unless `fstat`
    // succeeded.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFIFO {
            libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}
