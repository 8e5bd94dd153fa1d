// std::async with std::launch::async runs the task on a new thread; get()
// waits for it and orders its writes before main's reads. main writes the
// input before starting the task: no race.
#include <cstdio>
#include <future>

static int input[4];
static int output;

int main() {
    for (int i = 0; i < 4; i++) input[i] = i;
    auto f = std::async(std::launch::async, [] {
        int s = 0;
        for (int v : input) s += v;
        output = s;
        return s;
    });
    int r = f.get();
    std::printf("%d %d\n", r, output);
    return 0;
}
