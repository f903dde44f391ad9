#include "dist/mpi_comm.hpp"

// The C API only: OpenMPI's deprecated C++ bindings do not compile without warnings.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "dist/collectives.hpp"

namespace gl::dist {

bool mpi_available() { return true; }

namespace {

using Clock = std::chrono::steady_clock;

// Ends the process when a library call runs past its deadline: MPI_Allreduce cannot be
// cancelled, and a message plus a non-zero exit is better than waiting forever.
class Watchdog {
public:
    explicit Watchdog(int rank) : rank_(rank), thread_([this] { loop(); }) {}
    ~Watchdog() {
        {
            std::lock_guard lock(m_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    void arm(const char* what, double seconds) {
        std::lock_guard lock(m_);
        what_ = what;
        seconds_ = seconds;
        deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
        cv_.notify_all();
    }
    void disarm() {
        std::lock_guard lock(m_);
        deadline_.reset();
    }

private:
    void loop() {
        std::unique_lock lock(m_);
        while (!stop_) {
            if (!deadline_) {
                cv_.wait(lock);
            } else if (Clock::now() >= *deadline_) {
                std::fprintf(stderr,
                             "gradlab: rank %d: %s did not finish within %g s: another rank died, never reached "
                             "it, or called a different collective. Stopping this process.\n",
                             rank_, what_, seconds_);
                std::fflush(stderr);
                std::_Exit(70);
            } else {
                cv_.wait_until(lock, *deadline_);
            }
        }
    }
    int rank_;
    std::mutex m_;
    std::condition_variable cv_;
    std::optional<Clock::time_point> deadline_;
    const char* what_ = "";
    double seconds_ = 0;
    bool stop_ = false;
    std::thread thread_;
};

MpiCommunicator* g_world = nullptr;

void finalize_world() {
    delete g_world;
    g_world = nullptr;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

int byte_count(std::size_t bytes) {
    check(bytes <= static_cast<std::size_t>(INT_MAX),
          "MPI backend: a single message of " + std::to_string(bytes) + " bytes exceeds MPI's int count; split it");
    return static_cast<int>(bytes);
}

MPI_Datatype mpi_type(DType dtype) {
    if (dtype == DType::Float32) return MPI_FLOAT;
    if (dtype == DType::Float64) return MPI_DOUBLE;
    throw Error("MPI backend: all-reduce sums float32 or float64, not " + name_of(dtype));
}

}  // namespace

struct MpiCommunicator::State {
    std::unique_ptr<Watchdog> watchdog;
    bool broken = false;
    std::string broken_by;
    // Waits for the requests; a timeout leaves the communicator unusable (see wait_all).
    void wait(MPI_Request* requests, int n, double timeout_s, const std::string& what);
    // After a timed-out call, requests were cancelled half-way: refuse to go on.
    void ensure_usable(int rank) const {
        check(!broken, "MPI backend: rank " + std::to_string(rank) +
                           " cannot communicate after an earlier failure (" + broken_by + ")");
    }
};

MpiCommunicator& MpiCommunicator::world() {
    if (g_world) return *g_world;
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        int provided = 0;
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
        check(provided >= MPI_THREAD_SERIALIZED,
              "MPI backend: this MPI library does not allow calls from more than one thread (thread level " +
                  std::to_string(provided) + "); DDP's communication thread needs MPI_THREAD_SERIALIZED");
    }
    g_world = new MpiCommunicator();
    std::atexit(finalize_world);
    return *g_world;
}

MpiCommunicator::MpiCommunicator() : state_(std::make_unique<State>()) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // Errors come back as codes (we check them), not as an abort inside the library.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    state_->watchdog = std::make_unique<Watchdog>(rank_);
}

MpiCommunicator::~MpiCommunicator() = default;

namespace {

// Polls the requests until all are complete or the deadline passes; then cancels what is
// left and throws. Yielding between polls matters when ranks outnumber cores.
void wait_all(MPI_Request* requests, int n, double timeout_s, const std::string& what) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    for (;;) {
        int done = 0;
        const int rc = MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) throw CommError(what + " failed: MPI error code " + std::to_string(rc));
        if (done) return;
        if (Clock::now() >= deadline) {
            for (int i = 0; i < n; ++i)
                if (requests[i] != MPI_REQUEST_NULL) {
                    MPI_Cancel(&requests[i]);
                    MPI_Request_free(&requests[i]);
                }
            std::ostringstream limit;
            limit << timeout_s;
            throw CommError(what + " did not complete within " + limit.str() +
                            " s: the peer is stuck, died, never reached this call, or the ranks are deadlocked "
                            "(every rank waiting to receive, or every rank sending first: sends are synchronous, "
                            "use sendrecv in a ring)");
        }
        std::this_thread::yield();
    }
}

}  // namespace

void MpiCommunicator::State::wait(MPI_Request* requests, int n, double timeout_s, const std::string& what) {
    try {
        wait_all(requests, n, timeout_s, what);
    } catch (const CommError& e) {
        broken = true;
        broken_by = e.what();
        throw;
    }
}

void MpiCommunicator::do_send(const void* data, std::size_t bytes, int dest) {
    state_->ensure_usable(rank_);
    MPI_Request req;
    MPI_Issend(data, byte_count(bytes), MPI_BYTE, dest, 0, MPI_COMM_WORLD, &req);
    state_->wait(&req, 1, timeout_s(), "rank " + std::to_string(rank_) + ": send to rank " + std::to_string(dest));
}

void MpiCommunicator::do_recv(void* data, std::size_t bytes, int src) {
    state_->ensure_usable(rank_);
    MPI_Request req;
    MPI_Irecv(data, byte_count(bytes), MPI_BYTE, src, 0, MPI_COMM_WORLD, &req);
    state_->wait(&req, 1, timeout_s(), "rank " + std::to_string(rank_) + ": receive from rank " + std::to_string(src));
}

void MpiCommunicator::do_sendrecv(const void* send_data, std::size_t send_bytes, int dest, void* recv_data,
                                  std::size_t recv_bytes, int src) {
    state_->ensure_usable(rank_);
    MPI_Request reqs[2];
    MPI_Irecv(recv_data, byte_count(recv_bytes), MPI_BYTE, src, 0, MPI_COMM_WORLD, &reqs[0]);
    MPI_Issend(send_data, byte_count(send_bytes), MPI_BYTE, dest, 0, MPI_COMM_WORLD, &reqs[1]);
    state_->wait(reqs, 2, timeout_s(),
                 "rank " + std::to_string(rank_) + ": sendrecv (to rank " + std::to_string(dest) + ", from rank " +
                     std::to_string(src) + ")");
}

void MpiCommunicator::library_all_reduce(void* data, std::size_t count, DType dtype) {
    state_->ensure_usable(rank_);
    check(count <= static_cast<std::size_t>(INT_MAX), "MPI_Allreduce: count exceeds MPI's int");
    state_->watchdog->arm("MPI_Allreduce", timeout_s());
    const int rc = MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), mpi_type(dtype), MPI_SUM, MPI_COMM_WORLD);
    state_->watchdog->disarm();
    check(rc == MPI_SUCCESS, "MPI_Allreduce failed with MPI error code " + std::to_string(rc));
    const std::uint64_t moved = allreduce_bytes_sent(AllReduceAlgo::Library, count, size_of(dtype), size_, rank_);
    count_traffic(moved, moved, 2 * static_cast<std::uint64_t>(size_ - 1));
}

}  // namespace gl::dist
