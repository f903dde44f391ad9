// The MPI backend's stand-in for builds without MPI: says how to get it.
#include "dist/mpi_comm.hpp"

namespace gl::dist {

bool mpi_available() { return false; }

struct MpiCommunicator::State {};

MpiCommunicator& MpiCommunicator::world() {
    throw Error("this build has no MPI backend: install OpenMPI (apt-get install libopenmpi-dev openmpi-bin) "
                "and reconfigure (meson setup --reconfigure build)");
}

MpiCommunicator::~MpiCommunicator() = default;
void MpiCommunicator::library_all_reduce(void*, std::size_t, DType) {}
void MpiCommunicator::do_send(const void*, std::size_t, int) {}
void MpiCommunicator::do_recv(void*, std::size_t, int) {}
void MpiCommunicator::do_sendrecv(const void*, std::size_t, int, void*, std::size_t, int) {}

}  // namespace gl::dist
