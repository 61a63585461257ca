// <tests/clients/install/client.cpp> -- a C++ client of an installed telltale,
// for tests/tools/install.sh (design/build.txt .pack.cxx): classes, a
// lambda, std::thread and std::string around telltale's C interface.
// Emits ShapeMade for each shape and ShapeCount at the end, from two
// threads, names them, and checks the interface's results.

#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <telltale/event.h>

namespace {

class Shape {
public:
  Shape(std::string name, unsigned sides, double area)
    : name_(std::move(name)), sides_(sides), area_(area)
  {
    EVENT_PWDS(ShapeMade, this, sides_, area_, name_.c_str());
  }
  unsigned sides() const { return sides_; }

private:
  std::string name_;
  unsigned sides_;
  double area_;
};

}  // namespace

int main()
{
  EventKindSet kinds = 0;
  char err[200];
  if (EventKindParse("Shape", &kinds, err, sizeof err) != 0 ||
      kinds != EVENT_KIND_BIT(EventKindShape)) {
    std::fprintf(stderr, "EventKindParse: %s\n", err);
    return 1;
  }
  EventThreadNameSet("main");
  std::vector<Shape> shapes;
  shapes.emplace_back("triangle", 3, std::sqrt(3.0) / 4);
  shapes.emplace_back("square", 4, 1.0);
  std::thread worker([] {
    EventThreadNameSet("worker");
    Shape hexagon("hexagon", 6, 3 * std::sqrt(3.0) / 2);
    EVENT_U(ShapeCount, hexagon.sides());
  });
  worker.join();
  EVENT_U(ShapeCount, static_cast<EventU>(shapes.size()));
  std::printf("telltale %s\n", TELLTALE_VERSION_STRING);
  EventFinish();
  return 0;
}
