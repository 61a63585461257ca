/* <bench/spdlog.cc> -- spdlog's asynchronous logger as the benchmark's peer
 *
 * .design: design/tests.txt .bench.spdlog
 *
 * The logger many C and C++ programs pick, the way its documentation
 * shows it: spdlog::create_async into a file sink, the default pattern
 * (a formatted time, the logger's name and the level before the
 * message), one background thread and the default queue of 8192
 * messages, which blocks when full, so that like telltale it loses
 * nothing.  The emitting thread formats the message into the queue; the
 * background thread formats the line and writes it.  Built only where
 * libspdlog-dev is installed (bench/peers.sh), into bench.c with
 * -DBENCH_SPDLOG.
 */

#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>

extern "C" {
int benchSpdlogOpen(const char *path);
void benchSpdlogRun(size_t count, void *p);
void benchSpdlogClose(void);
}

static std::shared_ptr<spdlog::logger> logger;

/* benchSpdlogOpen -- the logger, writing to path; 0, or -1 and why on stderr */
int benchSpdlogOpen(const char *path)
{
  try {
    logger = spdlog::create_async<spdlog::sinks::basic_file_sink_mt>("bench", path, true);
  } catch (const spdlog::spdlog_ex &e) {
    fprintf(stderr, "bench: spdlog: %s\n", e.what());
    return -1;
  }
  return 0;
}

/* benchSpdlogRun -- count messages of the same three values; the round
 * ends when the background thread has written them, as telltale's async
 * case waits for its writer, so the writer's work is inside the time */
void benchSpdlogRun(size_t count, void *p)
{
  for (size_t i = 0; i < count; ++i)
    logger->info("TestPAW p={} a={:#x} w={}", p, (uintptr_t)p + 8, i);
  logger->flush();      /* queued behind the messages */
  while (spdlog::thread_pool()->queue_size() != 0)
    std::this_thread::sleep_for(std::chrono::microseconds(50));
}

void benchSpdlogClose(void)
{
  logger.reset();
  spdlog::shutdown();
}
