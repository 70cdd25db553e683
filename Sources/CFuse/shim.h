// Shim for libfuse3: FUSE_USE_VERSION must precede <fuse.h>, and the entry points are
// macros that pick a versioned symbol, so they are wrapped here as static inline functions.
#ifndef RINGLOOP_CFUSE_SHIM_H
#define RINGLOOP_CFUSE_SHIM_H
// No _GNU_SOURCE: it renames fd_set's member and clashes with Swift's Glibc module.
// The first include fixes glibc's feature macros before liburing.h defines its own.
#define FUSE_USE_VERSION 35
#include <fuse.h>

static inline struct fuse *ringloop_fuse_new(struct fuse_args *args, const struct fuse_operations *op,
                                            size_t op_size, void *private_data) {
    return fuse_new(args, op, op_size, private_data);
}
static inline int ringloop_fuse_loop_mt(struct fuse *f, struct fuse_loop_config *config) {
    return fuse_loop_mt(f, config);
}

#endif
