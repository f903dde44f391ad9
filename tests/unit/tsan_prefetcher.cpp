// The prefetcher (core/data/prefetcher.cpp) under ThreadSanitizer, built on its own with
// -fsanitize=thread (tests/meson.build): the core library cannot run under TSan (its
// function multi-versioning resolvers run before TSan starts), but the prefetcher needs
// only itself. Exercises every path that shares state between the loop and the workers:
// full epochs, early stops, exceptions, a timeout with a worker left behind. Exit status 0
// when every check holds; TSan makes a data race a failure (halt_on_error via the test's env).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "data/prefetcher.hpp"

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s\n", what.c_str());
        ++failures;
    }
}

}  // namespace

int main() {
    using namespace std::chrono_literals;
    using gl::Batch;
    std::atomic<int> made{0};
    const auto make = [&](std::size_t b) {
        ++made;
        if (b % 3 == 0) std::this_thread::yield();
        return Batch{};
    };
    for (int round = 0; round < 50; ++round) {
        const std::size_t workers = 1 + static_cast<std::size_t>(round % 4);
        {  // a whole epoch
            gl::Prefetcher p(make, 40, {workers, 1 + static_cast<std::size_t>(round % 3), 2000ms});
            for (int i = 0; i < 40; ++i) p.next();
            expect(p.delivered() == 40, "a full epoch hands out every batch");
        }
        {  // leave early (the destructor stops and joins)
            gl::Prefetcher p(make, 40, {workers, 2, 2000ms});
            p.next();
            p.next();
        }
        {  // a failing batch
            gl::Prefetcher p([](std::size_t b) -> Batch { if (b == 5) throw gl::Error("bad sample"); return Batch{}; },
                             20, {workers, 2, 2000ms});
            std::string message;
            try {
                for (int i = 0; i < 20; ++i) p.next();
            } catch (const gl::Error& e) {
                message = e.what();
            }
            expect(message.find("batch 5: bad sample") != std::string::npos, "the error reaches the loop: " + message);
        }
    }
    {  // a hung worker: reported, then left behind and released
        std::atomic<bool> release{false};
        std::atomic<bool> returned{false};
        {
            gl::Prefetcher p(
                [&](std::size_t b) {
                    if (b == 0) {
                        while (!release) std::this_thread::sleep_for(1ms);
                        returned = true;
                    }
                    return Batch{};
                },
                10, {2, 2, 100ms});
            bool reported = false;
            try {
                p.next();
            } catch (const gl::Error&) {
                reported = true;
            }
            expect(reported, "a hung worker is reported");
            p.stop();
            expect(p.abandoned_workers() == 1, "only the hung worker is left behind");
        }
        release = true;
        while (!returned) std::this_thread::sleep_for(1ms);
        std::this_thread::sleep_for(50ms);  // the abandoned worker sees `stopping` and exits
    }
    std::printf("%s (%d batches made)\n", failures ? "FAILED" : "passed", made.load());
    return failures ? 1 : 0;
}
