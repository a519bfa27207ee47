/* The trace's writer: a thread that takes the queued blocks of records
 * (trace_append.c, trace_block.c), encodes each (trace_codec.c), compresses and
 * seals it (trace_chunk.c) and writes it as one chunk with one write(2). A chunk
 * is complete or absent, so a process killed with SIGKILL leaves a trace readable
 * up to its last flushed chunk. Also the trace's start (the file, once it has a
 * path), its finish and its fate in a forked child. */
#include "record/trace_write.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "record/trace_append.h"
#include "record/trace_block.h"
#include "record/trace_chunk.h"
#include "base/lockwait.h"
#include "base/log.h"
#include "base/meta_alloc.h"

static int fd = -1;
static uint64_t flush_ns = 200u * 1000000u;
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t events_total, bytes_raw, bytes_written, chunks_lost;
static uint8_t *ebuf; /* the writer's encoded chunk, CF_BLOCK_ENCODED_MAX bytes */

/* ---- the file ---- */

static int open_trace(const char *path)
{
    int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (f < 0) {
        cf_log("cannot write the trace %s (%s); tracing is off", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
        cf_log("%s is not a regular file; tracing is off", path);
        close(f);
        return -1;
    }
    return f;
}

/* The file is created with the first chunk: a process that never records an
 * event (a shell, a compiler the program runs) leaves no trace behind. */
static char trace_path[4096];
static char *trace_header;
static uint32_t trace_header_len;
static bool open_failed;

static void open_file(void)
{
    if (fd >= 0 || open_failed) return;
    fd = open_trace(trace_path);
    uint32_t fixed[2] = {cf_chunk_version(), trace_header_len};
    bool checked = fixed[0] == CF_TRACE_VERSION;
    uint32_t check = cf_chunk_file_check(fixed, trace_header, trace_header_len);
    struct iovec iov[4] = {{CF_TRACE_MAGIC, 8},
                           {fixed, sizeof fixed},
                           {trace_header, trace_header_len},
                           {&check, checked ? sizeof check : 0}};
    ssize_t want = (ssize_t)(8 + sizeof fixed + trace_header_len + iov[3].iov_len);
    if (fd >= 0 && writev(fd, iov, 4) != want) {
        cf_log("cannot write the trace %s (%s); tracing is off", trace_path, strerror(errno));
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        open_failed = true;
        return;
    }
    bytes_written = (uint64_t)want;
}

/* ---- the writer ---- */

/* b's records, encoded into ebuf (deltas from the chunk's first event); false if
 * they did not fit, which CF_BLOCK_ENCODED_MAX rules out. */
static bool encode_block(const struct cf_block *b, struct cf_enc *enc)
{
    *enc = (struct cf_enc){.buf = ebuf, .cap = CF_BLOCK_ENCODED_MAX};
    for (uint32_t off = 0; off < b->len;) {
        struct cf_event e;
        off += cf_block_get_record(b->data + off, &e);
        if (!cf_ev_encode(enc, &e)) return false;
    }
    return true;
}

/* A part of a chunk (a full disk) would read as damage in the middle of the file
 * once later chunks follow it: it is cut off again. */
static void cut_partial_write(ssize_t got)
{
    if (got > 0 && (ftruncate(fd, (off_t)bytes_written) != 0 ||
                    lseek(fd, (off_t)bytes_written, SEEK_SET) != (off_t)bytes_written)) {
        close(fd);
        fd = -1;
        open_failed = true;
    }
}

/* With file_lock held. Events are counted here, a block at a time, rather than
 * by every emit in a word all threads would share. */
static void write_block(const struct cf_block *b)
{
    events_total += b->nevents;
    struct cf_enc enc;
    if (!encode_block(b, &enc)) {
        __atomic_add_fetch(&chunks_lost, 1, __ATOMIC_RELAXED);
        return;
    }
    struct cf_chunk_header h = {.flags = b->defs ? CF_CHUNK_DEFS : 0,
                                .tid = b->tid,
                                .nevents = b->nevents,
                                .raw_len = enc.len};
    size_t hlen;
    const void *payload = cf_chunk_seal(&h, ebuf, &hlen);
    struct iovec iov[2] = {{&h, hlen}, {(void *)payload, h.stored_len}};
    ssize_t want = (ssize_t)(hlen + h.stored_len);
    open_file();
    ssize_t got = fd < 0 ? -1 : writev(fd, iov, 2);
    if (got != want) {
        if (fd >= 0) cut_partial_write(got);
        __atomic_add_fetch(&chunks_lost, 1, __ATOMIC_RELAXED);
        return;
    }
    bytes_raw += h.raw_len;
    bytes_written += (uint64_t)want;
}

/* Writes every queued block; file_lock keeps chunks whole when the final flush
 * and the writer thread meet. */
static void drain(void)
{
    struct cf_block *b = cf_block_take_queued();
    if (b == NULL) return;
    pthread_mutex_lock(&file_lock);
    while (b) {
        struct cf_block *next = b->next;
        if (b->nevents) write_block(b);
        cf_block_recycle(b);
        b = next;
    }
    pthread_mutex_unlock(&file_lock);
}

static bool writing(void)
{
    return cf_trace_state() == CF_TRACE_WRITING;
}

static void *writer(void *arg)
{
    (void)arg;
    while (writing()) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t)(flush_ns / 1000000000u);
        until.tv_nsec += (long)(flush_ns % 1000000000u);
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        if (cf_block_wait(&until, writing)) cf_trace_collect_partial();
        drain();
    }
    return NULL;
}

/* ---- start and finish ---- */

void cf_trace_init(uint64_t flush_ms)
{
    flush_ns = (flush_ms ? flush_ms : 1) * 1000000u;
    cf_block_queue_init();
    cf_trace_buffers_init();
    cf_trace_state_set(CF_TRACE_BUFFERING);
}

static bool start_writer(void)
{
    sigset_t all, old;
    pthread_t th;
    pthread_attr_t attr;
    sigfillset(&all);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    bool ok = pthread_create(&th, &attr, writer, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return ok;
}

/* Tracing ends without a file. */
static int open_refused(void)
{
    cf_trace_state_set(CF_TRACE_OFF);
    cf_trace_buffers_off();
    return -1;
}

int cf_trace_open(const char *path, const void *header, uint32_t header_len)
{
    if (cf_trace_state() != CF_TRACE_BUFFERING) return -1;
    trace_header = cf_meta_alloc(header_len + 1u);
    if (trace_header == NULL) return open_refused();
    memcpy(trace_header, header, header_len);
    trace_header_len = header_len;
    snprintf(trace_path, sizeof trace_path, "%s", path);
    if (ebuf == NULL) /* a forked child has its parent's */
        ebuf = mmap(NULL, CF_BLOCK_ENCODED_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
    if (ebuf == MAP_FAILED) {
        ebuf = NULL;
        cf_meta_free(trace_header, header_len + 1u);
        trace_header = NULL;
        return open_refused();
    }
    cf_chunk_load(CF_BLOCK_ENCODED_MAX);
    cf_trace_state_set(CF_TRACE_WRITING);
    if (!start_writer()) cf_log("cannot start the trace writer; the trace is written at exit");
    return 0;
}

/* Every buffered event goes to the file now; later events are not traced. The
 * final flush may run in an exit() called from a signal handler that interrupted
 * a thread inside these locks (possibly this thread): it never waits on one for
 * long, and gives up what it cannot take. */
void cf_trace_finish(struct cf_trace_totals *totals)
{
    enum cf_trace_state s = cf_trace_state_swap(CF_TRACE_FINISHED);
    if (totals) *totals = (struct cf_trace_totals){0};
    if (s == CF_TRACE_BUFFERING) cf_trace_buffers_off();
    if (s != CF_TRACE_WRITING) return;
    bool whole = cf_trace_collect_all();
    struct timespec until = cf_deadline_after_ms(200);
    if (whole && cf_mutex_lock_until(&file_lock, &until)) {
        pthread_mutex_unlock(&file_lock);
        drain();
    } else {
        whole = false;
    }
    if (totals)
        *totals = (struct cf_trace_totals){.events = events_total,
                                           .raw_bytes = bytes_raw,
                                           .file_bytes = bytes_written,
                                           .chunks_lost = chunks_lost,
                                           .partial = !whole};
}

/* Every thread's buffered events to the file now, and the file to the disk, while
 * tracing goes on: a process that dies next keeps its trace up to here. */
bool cf_trace_sync(void)
{
    if (!writing()) return false;
    cf_trace_collect_partial();
    drain();
    pthread_mutex_lock(&file_lock);
    bool ok = fd >= 0 && fdatasync(fd) == 0;
    pthread_mutex_unlock(&file_lock);
    return ok;
}

/* A child forked after tracing began must not write into its parent's file: what
 * the parent buffered is dropped, and the trace waits (buffering) for the child's
 * own cf_trace_open, or cf_trace_finish. The parent's other threads, its writer
 * among them, do not exist here: the locks they may have held are made anew. */
void cf_trace_after_fork_child(void)
{
    enum cf_trace_state s = cf_trace_state();
    if (s == CF_TRACE_OFF) return;
    cf_trace_buffers_after_fork();
    cf_block_queue_after_fork();
    const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&file_lock, &fresh, sizeof fresh);
    if (fd >= 0) close(fd);
    fd = -1;
    open_failed = false;
    events_total = bytes_raw = bytes_written = chunks_lost = 0;
    if (trace_header) cf_meta_free(trace_header, trace_header_len + 1u);
    trace_header = NULL;
    if (s == CF_TRACE_FINISHED) return;
    cf_block_queue_init();
    cf_trace_fence_setup();
    cf_trace_state_set(CF_TRACE_BUFFERING);
}
