/* xpfo.h - public interface of xpfo, a hardened allocator that applies
 * eXclusive Page Frame Ownership to userspace heaps.
 *
 * Linking against libxpfo (pkg-config --libs xpfo) or preloading it
 * (LD_PRELOAD=libxpfo.so, or xpfo-run -- prog) replaces malloc and friends.
 * A library built with --disable-override replaces nothing: it exports only
 * the xpfo_ names below, and the program's malloc stays the libc's.
 * Functions that fail return NULL or -1 and set errno; they never abort on
 * bad arguments.  Misuse of the heap itself (double free, invalid free,
 * corrupted metadata) is fatal: one "xpfo: fatal: ..." line on stderr, then
 * abort().
 */
#ifndef XPFO_H
#define XPFO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define XPFO_API __attribute__((visibility("default")))
#else
#define XPFO_API
#endif

/* XPFO_VERSION_MAJOR, _MINOR, _PATCH and XPFO_VERSION_STRING */
#include "xpfo-version.h"

/* The allocator under its own names, in every build (the only way in with
 * --disable-override).  Same semantics as the libc functions: NULL (or an
 * errno for xpfo_posix_memalign) on failure, errno ENOMEM / EINVAL as glibc.
 * A pointer from one family must be freed by the same family: xpfo_free of
 * a pointer that is not from xpfo's heap is fatal, as free is. */
XPFO_API void *xpfo_malloc(size_t size);
XPFO_API void xpfo_free(void *p);
XPFO_API void *xpfo_calloc(size_t n, size_t size);
XPFO_API void *xpfo_realloc(void *p, size_t size);
XPFO_API void *xpfo_aligned_alloc(size_t align, size_t size);
XPFO_API int xpfo_posix_memalign(void **out, size_t align, size_t size);
XPFO_API size_t xpfo_usable_size(const void *p);
/* size must be what was requested (or up to the usable size); fatal if not */
XPFO_API void xpfo_free_sized(void *p, size_t size);

/* An owner of heap pages.  Opaque. */
typedef struct xpfo_compartment xpfo_compartment_t;

/* Flags of xpfo_compartment_create. */
#define XPFO_COMPARTMENT_SECRET 0x1u /* pages from memfd_secret: out of the kernel's direct map */
#define XPFO_COMPARTMENT_STRICT 0x2u /* inside it, the root heap is out of reach too */

/* A new compartment: a set of pages that only code inside it may reach.
 * name: up to 47 bytes (longer is cut).  NULL with errno: EINVAL (NULL name,
 * unknown flags), EMFILE (too many live compartments), ENOSYS (SECRET where
 * memfd_secret is missing or disabled: one warning says why; nothing falls
 * back to ordinary pages).  A SECRET compartment's memory counts against
 * RLIMIT_MEMLOCK: past it, malloc inside it returns NULL with ENOMEM. */
XPFO_API xpfo_compartment_t *xpfo_compartment_create(const char *name, unsigned flags);
/* Revoke and free all its pages; pointers into it fault afterwards.  -1 with
 * errno: EINVAL (NULL, root, not a compartment, destroyed), EBUSY (a thread
 * is inside it). */
XPFO_API int xpfo_compartment_destroy(xpfo_compartment_t *c);
/* Make c the calling thread's compartment (nestable); returns the previous
 * one, to pass to xpfo_leave.  NULL with errno: EINVAL (bad or destroyed
 * handle), EPERM (STRICT on the mprotect backend with other threads alive). */
XPFO_API xpfo_compartment_t *xpfo_enter(xpfo_compartment_t *c);
/* Return to `previous` (what xpfo_enter returned).  errno EINVAL when the
 * thread entered nothing or previous is not a live compartment. */
XPFO_API void xpfo_leave(xpfo_compartment_t *previous);
/* Allocate in c, from any thread (inside c or not).  NULL with errno:
 * EINVAL (bad or destroyed handle), ENOMEM. */
XPFO_API void *xpfo_malloc_in(xpfo_compartment_t *c, size_t size);
XPFO_API void *xpfo_calloc_in(xpfo_compartment_t *c, size_t n, size_t size);
XPFO_API void *xpfo_aligned_alloc_in(xpfo_compartment_t *c, size_t align, size_t size);
/* Give the whole-page allocation p to compartment `to`, in place.  Blocks of
 * 4096 bytes or more and blocks aligned to more than 4096 bytes are page
 * runs; smaller ones live in shared slabs.  Exception: root's blocks of up
 * to 16 KiB made before the first compartment was created are slab slots
 * too (EINVAL here), unless made by aligned_alloc(4096, n >= 4096).  Before
 * it returns, the
 * old owner's mappings of p are gone and p has fresh frames holding the same
 * bytes, so no reference the old owner kept (even one the kernel holds, such
 * as vmsplice) reaches what `to` writes later.  -1 with errno EINVAL (small,
 * interior, freed or foreign pointer; bad handle), or the errno of a failed
 * syscall (p is then unchanged). */
XPFO_API int xpfo_transfer(void *p, xpfo_compartment_t *to);
/* Move the live block p (any size, any allocation of this heap) to
 * compartment `to` and return where it lives now: p itself when it is a
 * page run that can change owner in place (as xpfo_transfer: fresh frames,
 * the old owner's mappings gone), otherwise a new block in to's own pages
 * holding p's bytes, at least malloc_usable_size(p) long, and p is freed
 * (revoked from its old owner): a block under 4096 bytes, root's blocks up
 * to 16 KiB made before the first compartment, and a page run of or into a
 * compartment a thread was locked into.  Use the result, never p again
 * unless they are equal.  `to` may be closed to the caller: the bytes get
 * there without opening it.  NULL with errno, p untouched and still valid:
 * EINVAL (p is not a live block's start: NULL, freed, interior, foreign;
 * `to` is not a live compartment), ENOMEM, EIO (`to` was poisoned by a
 * failed close), EPERM (the calling thread is locked and p is not its
 * compartment's, or p would have to be copied into another compartment: a
 * locked thread may give away only its own page runs, in place; or p
 * would be copied from or into root while a STRICT compartment is
 * inside), or the errno of a failed system call.  Who moves a locked
 * compartment's result out: the unlocked thread (README, "Moving data in
 * and out of a locked compartment"). */
XPFO_API void *xpfo_move(void *p, xpfo_compartment_t *to);
/* Write one block (len bytes at p) to the pipe or socket fd as a frame that
 * xpfo_recv reads: a 16-byte header holding the length, then the bytes.
 * Short writes and EINTR are retried; a socket is written with
 * MSG_NOSIGNAL (a closed peer is EPIPE, not SIGPIPE); one sender at a time
 * per descriptor.  A locked thread may call it (write and sendto are
 * allowed).  0, or -1 with errno: EINVAL (p NULL and len not 0), or the
 * errno of write(2)/sendto(2) (part of the frame may be written). */
XPFO_API int xpfo_send(int fd, const void *p, size_t len);
/* Read one frame written by xpfo_send from fd into a new block allocated in
 * `to` (NULL: the caller's current compartment; a closed one is filled
 * without opening it); *len (len may be NULL) gets its length.  The peer
 * is not trusted: NULL with errno EMSGSIZE when its length is above max
 * (nothing allocated; the frame's bytes are left unread: close fd),
 * EPROTO for a malformed header or a frame cut short by end of file
 * (nothing kept), ENODATA at end of file before a frame, EINVAL (`to` is
 * not a live compartment), EPERM (a locked thread and `to` is not its
 * compartment; `to` is root while a STRICT compartment is inside), ENOMEM,
 * or the errno of read(2).  Blocks until the whole
 * frame came, without holding any of xpfo's locks. */
XPFO_API void *xpfo_recv(int fd, xpfo_compartment_t *to, size_t max, size_t *len);

/* Confine the calling thread to c for the rest of its life: it enters c
 * (STRICT: root's pages out of its reach), can no longer enter or leave
 * compartments, and a seccomp filter limits its system calls to an
 * allow-list (docs/security.md).  Call it from outside any compartment.
 * Irreversible.  0, or -1 with errno: EINVAL (bad handle, unknown flags,
 * already inside a compartment), EPERM (mprotect backend and other threads
 * are alive: its protections are per process; pkeys: an unsafe WRPKRU,
 * XRSTOR or WRFSBASE in an executable mapping, reported; already locked),
 * ENOSPC (pkeys, other threads alive, and no key for root's pages:
 * root_key=0 or none free at start; reported), EAGAIN (pkeys: no key free
 * for c; reported), EBUSY (pkeys: another live thread is locked into c:
 * one per compartment; reported), ENOSYS (no seccomp).  On pkeys other
 * threads keep root; their signal handlers start with key 0 only, and on
 * x86-64 xpfo's fault handler opens root's key for a handler that touches
 * root's heap.  A handler's access to its thread's own compartment's pages,
 * and on arm64 to root's heap too, faults and is reported as a violation
 * (docs/security.md).
 * stdout: unless its buffer is c's or outside xpfo's heap (or it is
 * unbuffered), it is flushed and made unbuffered first, for every thread
 * (README, "stdio in a locked thread"). */
XPFO_API int xpfo_lock_thread(xpfo_compartment_t *c, unsigned flags);
#define XPFO_LOCK_KILL 0x1u /* a denied syscall kills the process (after the report) instead of failing with EPERM */

/* Flags of xpfo_share_fd. */
#define XPFO_SHARE_READ 0x1u
#define XPFO_SHARE_WRITE 0x2u
/* A new file descriptor whose contents are the pages of the allocation p (a
 * page run: see xpfo_transfer), to pass to another process (for example
 * with SCM_RIGHTS).  The allocation is backed by a memfd from then on
 * (moved there in place, same address), sealed so that no holder can add a
 * seal or grow it, and with XPFO_SHARE_READ alone so that no one but the
 * owner's own mapping can write it, however it is opened again.  When it is
 * freed, transferred or its compartment destroyed, the revocation reaches
 * every alias: the memfd is truncated, so other mappings fault with SIGBUS.
 * The caller closes the returned descriptor.  -1 with errno: EINVAL (not a
 * live page-run allocation of the caller's compartment, a secret
 * compartment's, bad flags, revoke=off), EMFILE (4096 runs shared at once),
 * EPERM (shared read-only before and flags ask for writing, or the other
 * way), or the errno of the failed syscall. */
XPFO_API int xpfo_share_fd(void *p, unsigned flags);

/* The compartment plain malloc allocates in outside any other compartment. */
XPFO_API xpfo_compartment_t *xpfo_root(void);
/* The calling thread's compartment. */
XPFO_API xpfo_compartment_t *xpfo_current(void);
/* The owner of the page that holds p; NULL (errno unchanged) when p is not
 * inside a live allocation's pages of this heap. */
XPFO_API xpfo_compartment_t *xpfo_owner(const void *p);
/* The compartment's name ("root" for the root compartment). */
XPFO_API const char *xpfo_compartment_name(const xpfo_compartment_t *c);

/* Apply the calling thread's pending revocations now.  Returns 0, or -1 with
 * errno set when a revocation failed (the pages stay quarantined). */
XPFO_API int xpfo_flush(void);

/* "mprotect" or "pkeys": the protection backend in use. */
XPFO_API const char *xpfo_backend(void);

/* Number of entries of the per-size-class arrays below. */
#define XPFO_STATS_CLASSES 48

/* Counters.  Every field is cumulative since start unless it says "now" or
 * "peak".  Syscall counts are the calls xpfo itself made. */
struct xpfo_stats {
	uint64_t size; /* bytes of this struct that were filled */

	/* allocation */
	uint64_t allocs;          /* successful allocations, all entry points */
	uint64_t frees;           /* frees of non-NULL pointers */
	uint64_t allocs_small;    /* served from slabs */
	uint64_t allocs_large;    /* served as page runs */
	uint64_t reallocs_in_place;
	uint64_t live_bytes;      /* now: bytes in live allocations (usable) */

	/* revocation engine (the gather) */
	uint64_t revoke_queued;      /* ranges queued for revocation */
	uint64_t pages_queued;       /* pages queued for revocation */
	uint64_t pages_cancelled;    /* queued pages taken back by the same owner */
	uint64_t pages_revoked;      /* pages whose access was removed */
	uint64_t revoke_syscalls;    /* protection syscalls that revoked */
	uint64_t grant_syscalls;     /* protection syscalls that granted */
	uint64_t flushes;            /* gathers applied, all reasons */
	uint64_t flush_full;         /* ... because the gather was full */
	uint64_t flush_explicit;     /* ... by xpfo_flush() */
	uint64_t flush_thread_exit;  /* ... at thread exit */
	uint64_t flush_reuse;        /* ... because pages were needed for reuse */
	uint64_t flush_eager;        /* ... because revoke=eager */
	uint64_t flush_other;        /* ... fork, stats, trim */
	uint64_t revoke_failures;    /* revocations that failed (quarantined) */
	uint64_t pages_quarantined;  /* now: pages held back after a failure */

	/* memory returned to the OS */
	uint64_t purges;          /* madvise calls that released pages */
	uint64_t pages_purged;

	/* address space */
	uint64_t mmap_syscalls;
	uint64_t munmap_syscalls;
	uint64_t madvise_syscalls;
	uint64_t mapped_bytes;         /* now: heap bytes accessible or retained */
	uint64_t peak_mapped_bytes;
	uint64_t resident_bytes;       /* now: heap pages possibly resident */
	uint64_t peak_resident_bytes;
	uint64_t metadata_bytes;       /* now: metadata in use */
	uint64_t segments;             /* now: segments in use */
	uint64_t vmas;                 /* now: VMAs inside the heap reservation */
	uint64_t vma_limit;            /* vm.max_map_count read at start */

	/* per size class (index = class; class sizes in class_size) */
	uint64_t class_size[XPFO_STATS_CLASSES];
	uint64_t class_allocs[XPFO_STATS_CLASSES];
	uint64_t class_frees[XPFO_STATS_CLASSES];

	/* compartments (added after the class arrays) */
	uint64_t flush_switch;        /* gathers applied at enter/leave */
	uint64_t compartments;        /* now: live compartments, root included */
	uint64_t compartment_opens;   /* mprotect backend: a first thread entered */
	uint64_t compartment_closes;  /* mprotect backend: the last thread left */
	uint64_t transfers;
	uint64_t violations;          /* faults reported in the heap */

	/* VMA budget */
	uint64_t vma_budget;          /* VMAs xpfo lets the process reach before degrading */
	uint64_t degraded;            /* now: 1 while over the budget */
	uint64_t spans_released_unprotected; /* revoked by release only, while degraded */

	/* pkeys backend */
	uint64_t keys_in_use;         /* now: keys held by compartments */
	uint64_t key_evictions;       /* keys taken from the least recently entered */
	uint64_t compartment_switches; /* xpfo_enter and xpfo_leave calls */
	uint64_t live_guards;         /* now: guard pages after live slabs and runs */
	uint64_t guards_skipped;      /* guards not made: too many live, or over the VMA budget */
	uint64_t touches_skipped;     /* hardening checks skipped on a closed compartment's slot:
					 no /proc/self/mem and its pages could not be moved */
	uint64_t close_failures;      /* compartment closes that failed (the compartment is poisoned) */

	/* sandbox (xpfo_lock_thread): the executor's work for locked threads */
	uint64_t sandbox_denied;      /* system calls of locked threads denied (filter or executor) */
	uint64_t sandbox_granted;     /* executor: protection changes it let through after checking */
	uint64_t sandbox_passed;      /* executor: memory calls outside the heap and metadata */
	/* secret compartments and alias views */
	uint64_t secret_mapped_bytes;   /* now: memfd_secret mappings (smaps Size) */
	uint64_t secret_resident_bytes; /* now: their resident frames (smaps Rss) */
	uint64_t aliases;               /* now: page runs shared with xpfo_share_fd */
	uint64_t alias_revocations;     /* aliases truncated (or punched) with their pages */
	/* grants */
	uint64_t regrants_soon;         /* granting syscalls on pages the same thread revoked
					   from the same owner within `batch` frees before */
	/* userfaultfd (release=uffd, and the degraded mode where it is armed) */
	uint64_t uffd_armed;            /* now: 1 when released pages are watched */
	uint64_t spans_released_uffd;   /* revoked by release only, watched (no mprotect) */
	uint64_t uffd_faults;           /* faults on missing heap pages the handler saw */
	uint64_t uffd_fills;            /* of those, pages of the thread's own filled */
	uint64_t uffd_syscalls;         /* userfaultfd, ioctl and mincore calls */
	/* hardening */
	uint64_t touches_locked;        /* slot checks and fills done under a compartment's lock:
					   the slot was not the thread's own nor root's */
	/* thread heaps */
	uint64_t spare_bytes;           /* now: empty slabs of exited threads kept, accessible to
					   their compartment, for its next thread (at most 4 MiB
					   a compartment) */
	/* revocation */
	uint64_t spans_guarded;         /* spans revoked with guard markers (release=guard) */
	uint64_t pages_populated;       /* missing pages of new slabs and realloc copies faulted
					   in by one call each (MADV_POPULATE_WRITE) */
	/* thread heaps, continued */
	uint64_t pages_shed;            /* pages of kept empty slabs retired because their heap
					   took fresh pages while keeping more than 64 */
	/* TLB shootdowns */
	uint64_t flush_rounds;          /* system calls that took access or frames away from
					   mapped pages (mprotect or pkey_mprotect lowering the
					   access or changing the key of written pages, never
					   a grant of free ones; MADV_DONTNEED, guard markers
					   installed (a round a range, none over ranges whose
					   frames the call before released), munmap, a mapping replaced or moved, a
					   shared file truncated or punched): each one a TLB
					   flush round, an upper bound (untouched pages need
					   none) */
	uint64_t flush_rounds_shared;   /* of those, made while xpfo knew of another live
					   thread of the process: the rounds whose flush may
					   interrupt other CPUs */
	/* flush_rounds by mechanism (they sum to it) */
	uint64_t flush_rounds_protect;  /* mprotect or pkey_mprotect */
	uint64_t flush_rounds_purge;    /* madvise(MADV_DONTNEED) of one range */
	uint64_t flush_rounds_guard;    /* madvise(MADV_GUARD_INSTALL) of one range */
	uint64_t flush_rounds_vector;   /* process_madvise over several ranges: guard markers
					   a round a range; MADV_DONTNEED a round a call where
					   the kernel gathers the ranges' flushes into one
					   (Linux 6.16 and later, 6.12 with kernel/'s
					   series), a round a range before */
	uint64_t flush_rounds_unmap;    /* munmap, a mapping replaced or moved (mmap
					   MAP_FIXED, mremap), a shared file truncated or
					   punched */
	/* thread exit */
	uint64_t pages_orphaned;        /* pages of runs an exiting thread left queued for the
					   next thread of their compartment (its orphan gather) */
	uint64_t pages_adopted;         /* of those, pages a later thread took back */
	/* revocation, continued */
	uint64_t spans_remapped;        /* spans revoked by one fresh no-access mapping over
					   them (mmap MAP_FIXED: access and frames gone in
					   one call, where mprotect and the purge after it
					   make two); each counted in revoke_syscalls and
					   flush_rounds_unmap too */
	uint64_t spans_zapped;          /* spans whose frames went with others' in one
					   process_madvise(MADV_DONTNEED) where the kernel
					   flushes once a call, then closed by mprotect with
					   nothing present (no flush): a round a batch */
};

/* Fill *out (size = sizeof *out, so older callers keep working).  Returns 0,
 * or -1 with errno EINVAL for a NULL pointer or a size too small to hold the
 * size field. */
XPFO_API int xpfo_stats_get(struct xpfo_stats *out, size_t size);
/* Write the counters as text to fd (no allocation). */
XPFO_API void xpfo_stats_print(int fd);
/* Write the counters to fd as one line holding one JSON object: every field
 * above by name (the class arrays as arrays), plus the backend, why it was
 * chosen, and the revoke mode (no allocation). */
XPFO_API void xpfo_stats_print_json(int fd);

#ifdef __cplusplus
}
#endif
#endif /* XPFO_H */
