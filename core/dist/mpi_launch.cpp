// How a process tells that mpirun started it (compiled with or without MPI).
#include <cstdlib>

#include "dist/mpi_comm.hpp"

namespace gl::dist {

bool launched_by_mpirun() {
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
        if (std::getenv(var) != nullptr) return true;
    return false;
}

}  // namespace gl::dist
