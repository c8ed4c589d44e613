//! Scheduling of the calling thread: its nice value and the CPUs it may run on. The testbed's fabric
//! thread uses them to keep its real-time schedule on a machine it shares with the hosts' programs.

use std::io;

/// Number of CPUs this process may run on (its affinity mask).
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; sched_getaffinity writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is valid and writable for its whole size.
    crate::check(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    // SAFETY: CPU_ISSET only reads `set`, and every index is below CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Restricts the calling thread to `cpus` (threads it starts afterwards inherit the mask).
pub fn pin_current_thread(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("no CPU {c}")));
        }
        // SAFETY: `c` is below CPU_SETSIZE, so CPU_SET stays inside `set`.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size given.
    crate::check(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })
        .map(drop)
}

/// Sets the nice value of the calling thread alone (Linux keeps one per thread; -20 is the highest
/// priority of the normal scheduling class, which needs CAP_SYS_NICE).
pub fn set_current_thread_nice(nice: i32) -> io::Result<()> {
    // SAFETY: gettid has no failure mode and touches no memory.
    let tid = unsafe { libc::gettid() };
    // SAFETY: PRIO_PROCESS with a thread id changes only that thread's nice value.
    crate::check(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) }).map(drop)
}

/// Puts the calling thread alone in `SCHED_FIFO` at `priority` (1-99; needs CAP_SYS_NICE). It then
/// runs as soon as it is runnable, before any normal thread of the machine; a kernel stops it only if
/// it keeps a CPU busy for most of a second (RT throttling, or the fair server since Linux 6.12).
pub fn set_current_thread_fifo(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param the kernel only reads.
    crate::check(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) }).map(drop)
}

/// Returns the calling thread to the normal scheduling class at nice 0.
pub fn set_current_thread_normal() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param the kernel only reads.
    crate::check(unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) }).map(drop)
}
