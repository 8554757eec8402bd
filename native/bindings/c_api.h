/* The only door into the core for the bindings (the Python module mpirep._core and the
 * TensorFlow op library). Plain C so that a binding built by another compiler, or against
 * another C++ ABI, can call it: a binding gets the function table from mpirep_get_api(), or
 * from Python as mpirep._core.api_table_address(), and calls nothing else of the core.
 *
 * Besides this header a binding may include core/common.h for the shared vocabulary only: the
 * X-macro lists of dtypes, reduction ops, collectives and status codes, their enums, and the
 * header-only helpers beside them. Setting names are those of core/settings.def. */
#ifndef MPIREP_C_API_H_
#define MPIREP_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPIREP_API_VERSION 11

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
  const char* group; /* the name of its group, the same on every rank; NULL or "": none. When ranks'
                        group sizes differ, every member of the group fails on every rank */
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

typedef struct mpirep_topology {
  int rank, size;
  int local_rank, local_size; /* among the ranks on this host */
  int cross_rank, cross_size; /* among the ranks with this local_rank */
} mpirep_topology;

/* What this rank's negotiation has done since start (docs/core.md, "Negotiation"). */
typedef struct mpirep_negotiation_stats {
  int64_t rounds;            /* agreement rounds this rank took part in */
  int64_t slow_rounds;       /* of them, rounds in which some rank sent rank 0 requests */
  int64_t cached_tensors;    /* this rank's tensors that ran from the response cache */
  int64_t requests_sent;     /* this rank's requests to rank 0 */
  int64_t requests_received; /* rank 0: requests it negotiated, its own included */
  int64_t messages_sent, messages_received; /* control messages: request and response lists */
  int64_t bytes_sent, bytes_received;
  int64_t agreement_bytes;   /* this rank's contributions to the rounds' allreduces */
  int64_t work_ns;           /* thread CPU time of negotiation work while timing was on */
} mpirep_negotiation_stats;

/* Called on the thread that runs the core's rounds when the output shape is known: memory for
 * the whole output, or NULL. */
typedef void* (*mpirep_allocate_fn)(void* user, int ndim, const int64_t* shape);
/* Called exactly once when an enqueued operation ends, on the thread that runs the core's
 * rounds: the background thread, or a thread waiting in enqueue_and_wait. */
typedef void (*mpirep_done_fn)(void* user, const mpirep_result* result);
/* For enqueue_and_wait: whether what the caller waits for has ended (nonzero), and a short wait
 * (tens of microseconds, say on a condition variable that `done` signals). */
typedef int (*mpirep_finished_fn)(void* user);
typedef void (*mpirep_pause_fn)(void* user);

typedef struct mpirep_api {
  int version;
  /* Starts the core on every rank of the MPI communicator whose Fortran handle is
   * `fortran_comm` (collective; the core works on duplicates of it). `names` and `values` are
   * `nsettings` settings of core/settings.def, as text; the others keep their defaults.
   * Returns a status code; on anything but OK, `error` holds why (an unknown setting, a bad
   * value, already started, MPI without MPI_THREAD_SERIALIZED). */
  int (*start)(int fortran_comm, int nsettings, const char* const* names, const char* const* values,
               char* error, size_t error_size);
  /* Collective; returns once every rank has called it, and does nothing when not started.
   * `reason`: "" or why this rank is leaving because it failed, quoted in the other ranks'
   * errors. */
  void (*shutdown)(const char* reason);
  int (*is_initialized)(void);
  /* Fills `out` and returns 1, or returns 0 when not started. */
  int (*topology)(mpirep_topology* out);
  /* The ranks of process set `id`, in order, into out[0 .. capacity); returns how many it has
   * (which may exceed `capacity`), or -1 when there is no such set or the core is not started. */
  int (*process_set_ranks)(int id, int* out, int capacity);
  /* Returns a status code; on anything but OK `done` is never called and `error` holds why. */
  int (*enqueue)(const mpirep_op_desc* op, mpirep_allocate_fn allocate, mpirep_done_fn done,
                 void* user, char* error, size_t error_size);
  /* The core's one pool of output memory, shared by every binding: 64-byte aligned memory of at
   * least `bytes`; `*capacity` receives what to hand back to put_output_buffer. */
  void* (*get_output_buffer)(size_t bytes, size_t* capacity);
  void (*put_output_buffer)(void* data, size_t capacity);
  /* Fills `out` and returns 1, or returns 0 when not started. */
  int (*negotiation_stats)(mpirep_negotiation_stats* out);
  /* Turns the measuring of work_ns on or off (off at start: it costs a system call per step). */
  void (*time_negotiation)(int on);
  /* Any thread, while collectives run; not collective. Rank 0 starts writing a timeline of every
   * tensor's phases to `path`, closing the one it was writing, if any (mark_cycles: also mark
   * each pass of the rounds loop that did work); the other ranks only check the arguments. Returns a
   * status code; on anything but OK, `error` holds why. */
  int (*start_timeline)(const char* path, int mark_cycles, char* error, size_t error_size);
  /* Rank 0 finishes and closes its timeline file, if it writes one. Returns a status code. */
  int (*stop_timeline)(char* error, size_t error_size);
  /* The value now in force of setting `name` (core/settings.def), as text into value[0 .. size):
   * autotuning changes some, on every rank at the same point. Returns 1; 0 when not started; -1 for
   * an unknown name; -2 when `size` is too small. */
  int (*current_setting)(const char* name, char* value, size_t size);
  /* 1 once autotuning has ended and every rank uses its final choice, else 0. */
  int (*autotune_finished)(void);
  /* For a thread that has nothing to do until its operation ends: enqueues `op` as enqueue does
   * (returning at once if that fails), then waits until finished(wait_user), running the core's
   * rounds itself meanwhile (no hand-off to the background thread and back), or calling
   * pause(wait_user) while another thread runs them. `done` callbacks of any operation may run on
   * the calling thread. */
  int (*enqueue_and_wait)(const mpirep_op_desc* op, mpirep_allocate_fn allocate, mpirep_done_fn done,
                          void* user, mpirep_finished_fn finished, mpirep_pause_fn pause, void* wait_user,
                          char* error, size_t error_size);
  /* Writes this rank's flight record now, with `reason` (core/flight_recorder.h); its path goes
   * to out[0 .. size). Returns a status code: OK, NOT_INITIALIZED, or INTERNAL with why in `out`
   * (the directory cannot be written, or `size` is too small). */
  int (*dump_flight_record)(const char* reason, char* out, size_t size);
  /* Under the elastic driver (setting elastic_peer_loss): once this rank knows of lost peers,
   * their ranks as "1,3" into out[0 .. size), and returns 1; 0 until then, or when not started;
   * -2 when `size` is too small. */
  int (*peer_loss_report)(char* out, size_t size);
  /* Any thread, started or not: copies `bytes` from `src` to `dst` with stores that bypass the
   * cache, as the core writes large outputs (core/stream_copy.h); for the benchmarks' bound. */
  void (*stream_copy)(void* dst, const void* src, size_t bytes);
} mpirep_api;

const mpirep_api* mpirep_get_api(void);

#ifdef __cplusplus
}
#endif

#endif /* MPIREP_C_API_H_ */
