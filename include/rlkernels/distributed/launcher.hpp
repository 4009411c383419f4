// rlkernels/distributed/launcher.hpp
// Where this process sits in a job, read from its launcher's environment variables (mpirun or
// mpiexec of Open MPI and MPICH, torchrun, Slurm's srun), and the address at which rank 0 hands
// NCCL's id to the others when no MPI does (rendezvous.hpp; NCCL_COMM_ID names it, or NCCL's own
// bootstrap meets there when it is set in the environment). Host only: no sockets, no CUDA, no MPI.
//
// Why that address is not MASTER_PORT: torchrun's agent on node 0 serves its rendezvous store
// (a c10d TCPStore) on MASTER_ADDR:MASTER_PORT for the whole job (static rendezvous, torchrun's
// default), so a worker that listens on MASTER_PORT fails with EADDRINUSE. Rank 0 listens on
// MASTER_PORT + 1 instead, unless NCCL_COMM_ID names the address (docs/distributed.md).
#pragma once

#include "../core/config.hpp"
#include "../core/error.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>

namespace rlkernels {

/// @brief The launcher that started this process.
enum class launcher_kind {
  mpi,       ///< mpirun / mpiexec (OMPI_COMM_WORLD_*, or PMI_RANK and PMI_SIZE: MPICH, Intel MPI, srun --mpi=pmi2)
  torchrun,  ///< torchrun, or anything that sets its RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
  slurm      ///< Slurm's srun (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, SLURM_STEP_NODELIST)
};

/// @brief Where this process sits in a job, as its launcher's environment variables say.
struct launcher_environment {
  launcher_kind launcher = launcher_kind::torchrun;  ///< who started the process
  int rank = 0;                                       ///< this process's rank, 0 .. world_size - 1
  int world_size = 1;                                 ///< the number of ranks
  int local_rank = 0;                                 ///< the rank on this machine (the CUDA device it drives)
  /// Rank 0's host: MASTER_ADDR; under srun without it, the first host of the step's node list
  /// (where srun starts rank 0); "" when unknown.
  std::string master_addr;
  int master_port = 0;        ///< MASTER_PORT, 0 when not set
  std::string nccl_comm_id;   ///< NCCL_COMM_ID as set ("host:port"), "" when not set

  /// @brief Reads the first launcher's variables found, in this order: Open MPI's
  /// (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK), PMI's (PMI_RANK, PMI_SIZE, and MPI_LOCALRANKID or
  /// SLURM_LOCALID), torchrun's (RANK, WORLD_SIZE, LOCAL_RANK), srun's (SLURM_PROCID,
  /// SLURM_STEP_NUM_TASKS, SLURM_LOCALID; a batch script, which has SLURM_PROCID and SLURM_NTASKS
  /// but no step, is a single process); MPI first, since mpirun inside a Slurm job inherits
  /// SLURM_* variables that describe its daemons, and torchrun before Slurm, since `srun
  /// torchrun` gives each node one SLURM_PROCID. LOCAL_RANK stands in for a launcher's missing
  /// local rank. Also reads MASTER_ADDR, MASTER_PORT and NCCL_COMM_ID. A few getenv calls.
  /// @return nullopt when no launcher's variables are set (a single process)
  /// @throw std::invalid_argument naming the variable: one of a launcher's pair set without the
  ///        other, a value that is not a whole decimal number in range, a rank not below the world
  ///        size, a local rank not below the local world size, an empty MASTER_ADDR, or several
  ///        ranks without a local rank
  static std::optional<launcher_environment> from_env();

  /// "mpirun", "torchrun" or "srun", for messages.
  const char* launcher_name() const noexcept {
    switch (launcher) {
      case launcher_kind::mpi: return "mpirun";
      case launcher_kind::torchrun: return "torchrun";
      default: return "srun";
    }
  }
};

/// @brief The "host:port" at which the ranks of a job started without MPI meet to share NCCL's
/// unique id (rank 0 listens there, the others connect: rendezvous.hpp; with NCCL_COMM_ID in the
/// environment, NCCL's own bootstrap meets there): env.nccl_comm_id when set,
/// else env.master_addr : env.master_port + 1 (an IPv6 address in brackets). Not MASTER_PORT
/// itself, which torchrun's agent holds. The address must be one of rank 0's machine.
/// @throw std::invalid_argument when neither is available (the message says what to set), when
///        NCCL_COMM_ID is not "host:port" or "[IPv6]:port", when it reuses MASTER_PORT under
///        torchrun, or when MASTER_PORT is 65535
inline std::string nccl_comm_id_for(const launcher_environment& env);

namespace detail {

/// The whole of `text` as a decimal int in [lo, hi], else nullopt (no spaces, no trailing text).
inline std::optional<int> parse_int_strict(const char* text, long lo, long hi) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  const char* p = text;
  if (*p == '+' || *p == '-') ++p;
  if (*p < '0' || *p > '9') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == nullptr || *end != '\0' || value < lo || value > hi) return std::nullopt;
  return static_cast<int>(value);
}

/// The variable's value, nullptr when unset or empty.
inline const char* launcher_variable(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

/// The variable as an int in [lo, hi]; throws naming it when it is not one.
inline int launcher_int(const char* name, long lo, long hi, const char* meaning) {
  const char* text = std::getenv(name);
  const std::optional<int> value = parse_int_strict(text, lo, hi);
  RLK_EXPECTS(value.has_value(), std::invalid_argument, "rlkernels::launcher_environment::from_env: ", name, "='",
              text ? text : "", "' is not ", meaning, " (a decimal integer in [", lo, ", ", hi, "])");
  return *value;
}

/// The first host of a Slurm host list ("gpu[003-004,010],login1" gives "gpu003",
/// "rack[1-2]-n[07-08]" gives "rack1-n07"); "" for an empty or malformed list.
inline std::string first_slurm_host(const std::string& list) {
  std::string host;
  int depth = 0;
  bool in_first_range = false;  // inside brackets, before the first ',' or '-'
  for (char c : list) {
    if (depth == 0) {
      if (c == ',') break;
      if (c == '[') {
        depth = 1;
        in_first_range = true;
        continue;
      }
      if (c == ']') return {};
      host += c;
    } else {
      if (c == '[') return {};
      if (c == ']') {
        depth = 0;
        continue;
      }
      if (c == ',' || c == '-') in_first_range = false;
      if (in_first_range) host += c;
    }
  }
  return depth == 0 ? host : std::string();
}

/// The rank pair of a launcher: both set, or neither (nullopt); one alone is refused.
struct rank_pair {
  int rank, size;
};
inline std::optional<rank_pair> read_rank_pair(const char* rank_name, const char* size_name, const char* launcher) {
  const char* rank_text = launcher_variable(rank_name);
  const char* size_text = launcher_variable(size_name);
  if (rank_text == nullptr && size_text == nullptr) return std::nullopt;
  RLK_EXPECTS(rank_text != nullptr && size_text != nullptr, std::invalid_argument,
              "rlkernels::launcher_environment::from_env: ", rank_text ? rank_name : size_name, " is set but ",
              rank_text ? size_name : rank_name, " is not (", launcher, " sets both)");
  rank_pair p{};
  p.size = launcher_int(size_name, 1, INT_MAX, "a number of ranks");
  p.rank = launcher_int(rank_name, 0, INT_MAX, "a rank");
  RLK_EXPECTS(p.rank < p.size, std::invalid_argument, "rlkernels::launcher_environment::from_env: ", rank_name, "=",
              p.rank, " is not below ", size_name, "=", p.size);
  return p;
}

/// The first of `names` that is set, as a local rank below `world_size`; -1 when none is.
inline int read_local_rank(std::initializer_list<const char*> names, int world_size) {
  for (const char* name : names) {
    if (launcher_variable(name) == nullptr) continue;
    const int local = launcher_int(name, 0, INT_MAX, "a local rank");
    RLK_EXPECTS(local < world_size, std::invalid_argument, "rlkernels::launcher_environment::from_env: ", name, "=",
                local, " is not below the world size ", world_size);
    return local;
  }
  return -1;
}

/// Refuses a local rank at or above the local world size `size_name` says (when it says).
inline void check_local_size(int local_rank, const char* local_name, const char* size_name) {
  if (launcher_variable(size_name) == nullptr) return;
  const int local_size = launcher_int(size_name, 1, INT_MAX, "a number of ranks on this machine");
  RLK_EXPECTS(local_rank < local_size, std::invalid_argument, "rlkernels::launcher_environment::from_env: ",
              local_name, "=", local_rank, " is not below ", size_name, "=", local_size);
}

}  // namespace detail

inline std::optional<launcher_environment> launcher_environment::from_env() {
  launcher_environment env;
  const char* local_name = nullptr;  // the variable the local rank came from
  int local = -1;
  if (auto p = detail::read_rank_pair("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun")) {
    env.launcher = launcher_kind::mpi;
    env.rank = p->rank;
    env.world_size = p->size;
    local = detail::read_local_rank({"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"}, env.world_size);
    if (local >= 0 && detail::launcher_variable("OMPI_COMM_WORLD_LOCAL_RANK"))
      detail::check_local_size(local, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE");
    local_name = "OMPI_COMM_WORLD_LOCAL_RANK";
  } else if (auto q = detail::read_rank_pair("PMI_RANK", "PMI_SIZE", "a PMI launcher (MPICH's mpiexec, srun --mpi=pmi2)")) {
    env.launcher = launcher_kind::mpi;
    env.rank = q->rank;
    env.world_size = q->size;
    local = detail::read_local_rank({"MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"}, env.world_size);
    local_name = "MPI_LOCALRANKID (or SLURM_LOCALID)";
  } else if (auto t = detail::read_rank_pair("RANK", "WORLD_SIZE", "torchrun")) {
    env.launcher = launcher_kind::torchrun;
    env.rank = t->rank;
    env.world_size = t->size;
    local = detail::read_local_rank({"LOCAL_RANK"}, env.world_size);
    if (local >= 0) detail::check_local_size(local, "LOCAL_RANK", "LOCAL_WORLD_SIZE");
    local_name = "LOCAL_RANK";
  } else {
    // srun sets SLURM_STEP_NUM_TASKS in every task; a batch script (SLURM_PROCID=0, SLURM_NTASKS
    // of the allocation, no step) is one process, not rank 0 of SLURM_NTASKS.
    if (detail::launcher_variable("SLURM_STEP_NUM_TASKS") == nullptr) return std::nullopt;
    auto s = detail::read_rank_pair("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "srun");
    env.launcher = launcher_kind::slurm;
    env.rank = s->rank;
    env.world_size = s->size;
    local = detail::read_local_rank({"SLURM_LOCALID", "LOCAL_RANK"}, env.world_size);
    local_name = "SLURM_LOCALID";
  }
  if (local < 0) {
    RLK_EXPECTS(env.world_size == 1, std::invalid_argument, "rlkernels::launcher_environment::from_env: ",
                env.launcher_name(), " started ", env.world_size, " ranks, but ", local_name,
                " is not set: which GPU is this rank's? (set LOCAL_RANK)");
    local = 0;
  }
  env.local_rank = local;

  if (const char* addr = std::getenv("MASTER_ADDR")) {
    RLK_EXPECTS(*addr != '\0', std::invalid_argument,
                "rlkernels::launcher_environment::from_env: MASTER_ADDR is set but empty");
    env.master_addr = addr;
  } else if (env.launcher == launcher_kind::slurm) {
    for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
      if (const char* list = detail::launcher_variable(name)) {
        env.master_addr = detail::first_slurm_host(list);
        RLK_EXPECTS(!env.master_addr.empty(), std::invalid_argument, "rlkernels::launcher_environment::from_env: ",
                    name, "='", list, "' is not a Slurm host list (set MASTER_ADDR to rank 0's host)");
        break;
      }
    }
  }
  if (std::getenv("MASTER_PORT")) env.master_port = detail::launcher_int("MASTER_PORT", 1, 65535, "a TCP port");
  if (const char* id = std::getenv("NCCL_COMM_ID")) env.nccl_comm_id = id;
  return env;
}

inline std::string nccl_comm_id_for(const launcher_environment& env) {
  static const char* const how =
      "set NCCL_COMM_ID=host:port (rank 0's host and a free port), or MASTER_ADDR and MASTER_PORT (NCCL then "
      "listens on MASTER_PORT + 1)";
  if (!env.nccl_comm_id.empty()) {
    const std::string& id = env.nccl_comm_id;
    std::size_t colon = std::string::npos;
    if (id[0] == '[') {
      const std::size_t close = id.find(']');
      if (close != std::string::npos && close > 1 && close + 1 < id.size() && id[close + 1] == ':') colon = close + 1;
    } else {
      colon = id.find(':');
      if (colon != std::string::npos && id.find(':', colon + 1) != std::string::npos) colon = std::string::npos;
      if (colon == 0) colon = std::string::npos;
    }
    const std::optional<int> port =
        colon == std::string::npos ? std::nullopt : detail::parse_int_strict(id.c_str() + colon + 1, 1, 65535);
    RLK_EXPECTS(port.has_value(), std::invalid_argument, "rlkernels::nccl_comm_id_for: NCCL_COMM_ID='", id,
                "' is not host:port or [IPv6 address]:port");
    RLK_EXPECTS(!(env.launcher == launcher_kind::torchrun && *port == env.master_port), std::invalid_argument,
                "rlkernels::nccl_comm_id_for: NCCL_COMM_ID='", id, "' uses MASTER_PORT ", env.master_port,
                ", which torchrun's agent holds for its rendezvous store: choose another port");
    return id;
  }
  RLK_EXPECTS(!env.master_addr.empty() && env.master_port != 0, std::invalid_argument,
              "rlkernels::nccl_comm_id_for: rank ", env.rank, " of ", env.world_size, " (", env.launcher_name(),
              ") cannot tell where NCCL's bootstrap meets: ", env.master_addr.empty() ? "MASTER_ADDR" : "MASTER_PORT",
              " is not set and neither is NCCL_COMM_ID; ", how);
  RLK_EXPECTS(env.master_port < 65535, std::invalid_argument, "rlkernels::nccl_comm_id_for: MASTER_PORT is 65535, "
              "so MASTER_PORT + 1 is not a port; ", how);
  const bool ipv6 = env.master_addr.find(':') != std::string::npos && env.master_addr[0] != '[';
  return (ipv6 ? "[" + env.master_addr + "]" : env.master_addr) + ":" + std::to_string(env.master_port + 1);
}

}  // namespace rlkernels
