/* A small disk for tests, where no small file system can be mounted (a CI container refusing
 * `unshare --user --mount`): preloaded into a process (LD_PRELOAD), it makes the folder
 * MRCNN_SMALL_DISK_DIR behave as a disk of MRCNN_SMALL_DISK_BYTES bytes.
 *  - write, pwrite and writev to a file under the folder write what still fits (a short
 *    write) and then fail with ENOSPC, as a full disk does; the space in use is the size of
 *    the folder's files (counted again before refusing, so deleted files give their space back).
 *  - statvfs under the folder reports that disk's size and free space, unless
 *    MRCNN_SMALL_DISK_HIDE=1: then the real disk's numbers pass (a free-space check passes and
 *    the write itself fails, as when another process fills the disk meanwhile).
 * Every other file and call passes through unchanged. */
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char folder[PATH_MAX];
static size_t folder_len;
static uint64_t capacity;
static int hide_statvfs;
static int configured = -1; /* -1 not read yet, 0 off, 1 on */
static uint64_t used;       /* bytes in the folder's files, as last counted plus written since */

static void configure(void) {
  if (configured >= 0) return;
  const char* dir = getenv("MRCNN_SMALL_DISK_DIR");
  const char* bytes = getenv("MRCNN_SMALL_DISK_BYTES");
  configured = 0;
  if (!dir || !bytes || !realpath(dir, folder)) return;
  folder_len = strlen(folder);
  capacity = strtoull(bytes, NULL, 10);
  const char* hide = getenv("MRCNN_SMALL_DISK_HIDE");
  hide_statvfs = hide && strcmp(hide, "1") == 0;
  configured = 1;
}

static int under(const char* path) {
  return strncmp(path, folder, folder_len) == 0 && (path[folder_len] == '/' || path[folder_len] == '\0');
}

static uint64_t counted;
static int add_file(const char* path, const struct stat* st, int type, struct FTW* ftw) {
  (void)path;
  (void)ftw;
  if (type == FTW_F && S_ISREG(st->st_mode)) counted += static_cast<uint64_t>(st->st_size);
  return 0;
}

static uint64_t count_used(void) {
  counted = 0;
  nftw(folder, add_file, 16, FTW_PHYS);
  return counted;
}

static int fd_under(int fd) {
  char link[64], target[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return 0;
  target[n] = '\0';
  return under(target);
}

/* How many of `want` bytes fit (0: none), or want itself for a file elsewhere. */
static size_t room(int fd, size_t want) {
  configure();
  if (configured != 1 || want == 0 || !fd_under(fd)) return want;
  pthread_mutex_lock(&lock);
  if (used + want > capacity) used = count_used();
  const size_t fits = used >= capacity ? 0 : (capacity - used < want ? static_cast<size_t>(capacity - used) : want);
  used += fits;
  pthread_mutex_unlock(&lock);
  return fits;
}

extern "C" {

ssize_t write(int fd, const void* buf, size_t count) {
  static ssize_t (*real)(int, const void*, size_t);
  if (!real) real = reinterpret_cast<ssize_t (*)(int, const void*, size_t)>(dlsym(RTLD_NEXT, "write"));
  const size_t n = room(fd, count);
  if (n == 0 && count > 0) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, buf, n);
}

ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  static ssize_t (*real)(int, const void*, size_t, off_t);
  if (!real) real = reinterpret_cast<ssize_t (*)(int, const void*, size_t, off_t)>(dlsym(RTLD_NEXT, "pwrite"));
  const size_t n = room(fd, count);
  if (n == 0 && count > 0) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, buf, n, offset);
}

ssize_t pwrite64(int fd, const void* buf, size_t count, off64_t offset) {
  return pwrite(fd, buf, count, static_cast<off_t>(offset));
}

ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  static ssize_t (*real)(int, const struct iovec*, int);
  if (!real) real = reinterpret_cast<ssize_t (*)(int, const struct iovec*, int)>(dlsym(RTLD_NEXT, "writev"));
  size_t total = 0;
  for (int i = 0; i < iovcnt; ++i) total += iov[i].iov_len;
  const size_t n = room(fd, total);
  if (n == total) return real(fd, iov, iovcnt);
  if (n == 0) {
    errno = ENOSPC;
    return -1;
  }
  /* The part that fits, from the first buffers. */
  ssize_t done = 0;
  size_t left = n;
  for (int i = 0; i < iovcnt && left > 0; ++i) {
    const size_t part = iov[i].iov_len < left ? iov[i].iov_len : left;
    const ssize_t w = write(fd, iov[i].iov_base, part);
    if (w < 0) return done > 0 ? done : w;
    done += w;
    left -= static_cast<size_t>(w);
  }
  return done;
}

static void small_disk(struct statvfs* s) {
  pthread_mutex_lock(&lock);
  used = count_used();
  const uint64_t free_bytes = used >= capacity ? 0 : capacity - used;
  pthread_mutex_unlock(&lock);
  const unsigned long unit = s->f_frsize ? s->f_frsize : 4096;
  s->f_blocks = capacity / unit;
  s->f_bfree = s->f_bavail = free_bytes / unit;
}

int statvfs(const char* path, struct statvfs* s) noexcept {
  static int (*real)(const char*, struct statvfs*);
  if (!real) real = reinterpret_cast<int (*)(const char*, struct statvfs*)>(dlsym(RTLD_NEXT, "statvfs"));
  const int r = real(path, s);
  configure();
  if (r != 0 || configured != 1 || hide_statvfs) return r;
  char full[PATH_MAX];
  if (realpath(path, full) && under(full)) small_disk(s);
  return r;
}

int statvfs64(const char* path, struct statvfs64* s) noexcept {
  return statvfs(path, reinterpret_cast<struct statvfs*>(s));
}

}  // extern "C"
