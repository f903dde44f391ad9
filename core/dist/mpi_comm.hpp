/// @file
/// @brief The MPI backend: one process per worker, on one machine or several (OpenMPI).
///
/// Owns: MPI initialisation and finalisation, point-to-point messages with timeouts, and
/// MPI_Allreduce as the library peer. Start the workers with mpirun:
///
/// ```
/// mpirun -np 4 build/tools/gradlab train --parallel ddp          # one machine
/// mpirun -H a,b -np 2 build/tools/gradlab train --parallel ddp   # two machines
/// ```
///
/// Sends are synchronous (MPI_Issend), like the thread backend's, so a ring in which every
/// rank sends first deadlocks in the same way on both. Every point-to-point call polls
/// its requests until done or until timeout_s(), then cancels them and throws CommError;
/// after that the communicator refuses further calls. MPI_Allreduce cannot be
/// interrupted, so a watchdog ends the process with a message when it runs past the
/// timeout (mpirun then stops the other ranks). A rank that dies makes mpirun stop the
/// job. Built only when MPI was found (mpi_available()); otherwise world() throws.
#pragma once

#include <memory>

#include "dist/communicator.hpp"

namespace gl::dist {

/// True when this build has the MPI backend.
bool mpi_available();
/// True when this process was started by mpirun (OpenMPI, MPICH or PMIx variables are
/// set), so the train command picks the MPI backend.
bool launched_by_mpirun();

/// The ranks of MPI_COMM_WORLD.
class MpiCommunicator final : public Communicator {
public:
    /// This process's rank of MPI_COMM_WORLD; initialises MPI on first use (thread level
    /// serialized, so DDP's communication thread may call it) and finalises it at exit.
    static MpiCommunicator& world();
    ~MpiCommunicator() override;
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    std::string backend() const override { return "mpi"; }
    /// MPI_Allreduce (sum, in place), under the watchdog.
    void library_all_reduce(void* data, std::size_t count, DType dtype) override;
    bool has_library_all_reduce() const override { return true; }

protected:
    void do_send(const void* data, std::size_t bytes, int dest) override;
    void do_recv(void* data, std::size_t bytes, int src) override;
    void do_sendrecv(const void* send_data, std::size_t send_bytes, int dest, void* recv_data,
                     std::size_t recv_bytes, int src) override;

private:
    MpiCommunicator();
    struct State;
    std::unique_ptr<State> state_;
    int rank_ = 0, size_ = 1;
};

}  // namespace gl::dist
