/// The community database of SDL game controller mappings (SDL_GameControllerDB,
/// `gamecontrollerdb.txt`, zlib licence), whose Linux entries RingLoop bundles as data.
///
/// ``linuxText`` is the upstream file's `platform:Linux` lines at ``commit``, with the
/// database's licence beside them in the generated source file;
/// ``SDLMappingDatabase/bundled(hints:)`` loads them. `tools/update-gamecontrollerdb`
/// regenerates them from a checkout of the upstream repository. A user's own file or
/// `SDL_GAMECONTROLLERCONFIG` lines go on top (``SDLMappingDatabase/addEnvironment(_:)``).
public enum SDLGameControllerDB {}
