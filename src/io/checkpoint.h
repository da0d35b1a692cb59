/* A model's tensors by name, from one safetensors file or from a directory
 * holding model.safetensors or, for a sharded checkpoint,
 * model.safetensors.index.json ({"weight_map": {tensor: shard file}}) and
 * the shards it names, which must sit in the same directory.  As for
 * safetensors.h: SSMJIT_ERR_IO when the system refuses (symlinks are
 * followed, as the Hugging Face hub cache needs), SSMJIT_ERR_INVALID_ARG for
 * malformed contents. */
#ifndef SSMJIT_CHECKPOINT_H
#define SSMJIT_CHECKPOINT_H

#include "safetensors.h"

#define SJ_CHECKPOINT_FILE "model.safetensors"
#define SJ_CHECKPOINT_INDEX "model.safetensors.index.json"

typedef struct sj_checkpoint sj_checkpoint;

/* path: a safetensors file, or a directory (SJ_CHECKPOINT_FILE is used when
 * present, else SJ_CHECKPOINT_INDEX, as Hugging Face does). */
ssmjit_status sj_checkpoint_open(const char *path, sj_checkpoint **out);

/* NULL is a no-op. */
void sj_checkpoint_close(sj_checkpoint *ck);

/* The tensor called name, or NULL.  For a sharded checkpoint, the one in
 * the shard the index names. */
const sj_st_tensor *sj_checkpoint_find(const sj_checkpoint *ck, const char *name);

#endif
