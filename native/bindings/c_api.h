/* The only door into the core for framework adapters (the Python module, the TensorFlow op
 * library). Plain C so that an adapter built by another compiler, or against another C++ ABI,
 * can call it: adapters get the function table from mpirep_get_api(), or from Python as
 * mpirep._core.api_table_address(), and call nothing else. */
#ifndef MPIREP_C_API_H_
#define MPIREP_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPIREP_API_VERSION 3

/* Codes are those of mpirep::Collective, DataType, ReduceOp and StatusCode (common.h); Python
 * reads them from mpirep._core. */
typedef struct mpirep_op_desc {
  int collective;
  const char* name; /* unique among this rank's pending operations */
  int dtype;
  int ndim;
  const int64_t* shape;
  int reduce_op;
  int root_rank;
  double prescale;
  double postscale;
  int nsplits; /* alltoall: one per rank */
  const int64_t* splits;
  const void* input; /* must stay valid and unchanged until `done` */
  int process_set;   /* 0: every rank; root_rank and splits then count the set's ranks */
  int group_size;    /* tensors in its grouped allreduce, so ranks can check they agree; 0: none */
  int n_new_set_ranks; /* add_process_set: the ranks of the new set, increasing */
  const int64_t* new_set_ranks;
  int removed_set;   /* remove_process_set: the id of the set to remove */
} mpirep_op_desc;

/* How an enqueued operation ended. Pointers are valid during the `done` call only. */
typedef struct mpirep_result {
  int status; /* a StatusCode */
  const char* message;
  int nsplits; /* alltoall: the rows received from each rank */
  const int64_t* received_splits;
  int last_joined_rank; /* join: the rank that joined last */
  int new_process_set;  /* add_process_set: the id of the new set */
} mpirep_result;

/* Called on the background thread when the output shape is known: memory for the whole output,
 * or NULL. */
typedef void* (*mpirep_allocate_fn)(void* user, int ndim, const int64_t* shape);
/* Called exactly once on the background thread when an enqueued operation ends. */
typedef void (*mpirep_done_fn)(void* user, const mpirep_result* result);

typedef struct mpirep_api {
  int version;
  /* Returns a status code; on anything but OK `done` is never called and `error` holds why. */
  int (*enqueue)(const mpirep_op_desc* op, mpirep_allocate_fn allocate, mpirep_done_fn done,
                 void* user, char* error, size_t error_size);
  int (*is_initialized)(void);
  int (*rank)(void);
  int (*size)(void);
} mpirep_api;

const mpirep_api* mpirep_get_api(void);

#ifdef __cplusplus
}
#endif

#endif /* MPIREP_C_API_H_ */
