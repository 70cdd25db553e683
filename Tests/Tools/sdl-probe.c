// sdl-probe: what libsdl2 itself makes of one evdev node, for RingLoop's gamepad tests.
//
// Built by the tests (cc sdl-probe.c $(pkg-config --cflags --libs sdl2)), never linked
// into the package. SDL is pointed at the node through SDL_JOYSTICK_DEVICE, with udev and
// HIDAPI off, so SDL's Linux evdev backend opens it as it opens /dev/input/eventN: the
// GUID, the name, the numbering of buttons, axes and hats, the mapping SDL picks, and,
// with --events, the joystick and game controller events SDL reports until the device
// goes away (or --seconds pass).
//
// Usage: sdl-probe NODE [--mapping LINE]... [--mappings-file FILE] [--dump-mappings] [--events] [--seconds N]
#include <SDL.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: sdl-probe NODE [--mapping LINE]... [--mappings-file FILE] [--events] [--seconds N]\n");
        return 2;
    }
    const char *node = argv[1];
    // Line by line: the tests read the events while the probe runs.
    setvbuf(stdout, NULL, _IOLBF, 0);
    int events = 0;
    int dump = 0;
    int seconds = 20;
    setenv("SDL_JOYSTICK_DEVICE", node, 1);
    setenv("SDL_JOYSTICK_DISABLE_UDEV", "1", 1);
    setenv("SDL_JOYSTICK_HIDAPI", "0", 1);
    if (SDL_Init(SDL_INIT_GAMECONTROLLER) != 0) {
        fprintf(stderr, "sdl-probe: SDL_Init: %s\n", SDL_GetError());
        return 1;
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--mapping") == 0 && i + 1 < argc) {
            if (SDL_GameControllerAddMapping(argv[++i]) < 0) {
                fprintf(stderr, "sdl-probe: mapping refused: %s\n", SDL_GetError());
                return 1;
            }
        } else if (strcmp(argv[i], "--mappings-file") == 0 && i + 1 < argc) {
            if (SDL_GameControllerAddMappingsFromFile(argv[++i]) < 0) {
                fprintf(stderr, "sdl-probe: mappings file refused: %s\n", SDL_GetError());
                return 1;
            }
        } else if (strcmp(argv[i], "--dump-mappings") == 0) {
            dump = 1;
        } else if (strcmp(argv[i], "--events") == 0) {
            events = 1;
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atoi(argv[++i]);
        } else {
            fprintf(stderr, "sdl-probe: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (dump) {
        // Every mapping SDL holds, in its list's order (the order its look-ups walk).
        for (int i = 0; i < SDL_GameControllerNumMappings(); i++) {
            char *line = SDL_GameControllerMappingForIndex(i);
            if (line) printf("dbline %s\n", line);
            SDL_free(line);
        }
    }
    if (SDL_NumJoysticks() != 1) {
        fprintf(stderr, "sdl-probe: SDL sees %d joysticks at %s\n", SDL_NumJoysticks(), node);
        return 1;
    }
    char guid[33];
    SDL_JoystickGetGUIDString(SDL_JoystickGetDeviceGUID(0), guid, sizeof(guid));
    printf("guid %s\n", guid);
    printf("name %s\n", SDL_JoystickNameForIndex(0));
    char *mapping = SDL_GameControllerMappingForDeviceIndex(0);
    printf("mapping %s\n", mapping ? mapping : "none");
    SDL_free(mapping);
    SDL_Joystick *joystick = SDL_JoystickOpen(0);
    if (!joystick) {
        fprintf(stderr, "sdl-probe: SDL_JoystickOpen: %s\n", SDL_GetError());
        return 1;
    }
    printf("counts buttons %d axes %d hats %d\n", SDL_JoystickNumButtons(joystick), SDL_JoystickNumAxes(joystick),
        SDL_JoystickNumHats(joystick));
    if (!events) {
        fflush(stdout);
        SDL_Quit();
        return 0;
    }
    SDL_GameController *controller = SDL_IsGameController(0) ? SDL_GameControllerOpen(0) : NULL;
    // What opening reported (the state read at open) is drained before "ready".
    SDL_Event event;
    while (SDL_PollEvent(&event)) {}
    printf("ready\n");
    fflush(stdout);
    Uint32 deadline = SDL_GetTicks() + (Uint32)seconds * 1000;
    int gone = 0;
    while (!gone && !SDL_TICKS_PASSED(SDL_GetTicks(), deadline)) {
        if (!SDL_WaitEventTimeout(&event, 50)) continue;
        switch (event.type) {
        case SDL_JOYBUTTONDOWN:
        case SDL_JOYBUTTONUP:
            printf("jbutton %d %d\n", event.jbutton.button, event.jbutton.state);
            break;
        case SDL_JOYAXISMOTION:
            printf("jaxis %d %d\n", event.jaxis.axis, event.jaxis.value);
            break;
        case SDL_JOYHATMOTION:
            printf("jhat %d %d\n", event.jhat.hat, event.jhat.value);
            break;
        case SDL_CONTROLLERBUTTONDOWN:
        case SDL_CONTROLLERBUTTONUP:
            printf("button %s %d\n", SDL_GameControllerGetStringForButton(event.cbutton.button), event.cbutton.state);
            break;
        case SDL_CONTROLLERAXISMOTION:
            printf("axis %s %d\n", SDL_GameControllerGetStringForAxis(event.caxis.axis), event.caxis.value);
            break;
        case SDL_JOYDEVICEREMOVED:
            gone = 1;
            break;
        default:
            break;
        }
    }
    printf(gone ? "removed\n" : "timeout\n");
    fflush(stdout);
    if (controller) SDL_GameControllerClose(controller);
    SDL_JoystickClose(joystick);
    SDL_Quit();
    return 0;
}
