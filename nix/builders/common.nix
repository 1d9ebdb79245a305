# Shell snippets the builders share. Every value from the catalog reaches the shell through
# lib.escapeShellArg, and names that become shell variable names are checked first.
lib:
rec {
  q = lib.escapeShellArg;

  # CPU flags appended to CXXFLAGS/CFLAGS as one word.
  cpuFlags = flags: ''
    export CXXFLAGS="$CXXFLAGS "${q (lib.concatStringsSep " " flags)}
    export CFLAGS="$CFLAGS "${q (lib.concatStringsSep " " flags)}
  '';

  # `USE_<FEATURE>=0` for each feature: the name must be a shell identifier.
  disable = features: lib.concatMapStrings (
    feature:
    if builtins.match "[A-Z][A-Z0-9_]*" feature == null then
      throw "not a PyTorch feature name: ${feature}"
    else
      "export USE_${feature}=0\n"
  ) features;

  # nixpkgs' torch preBuild runs `export MAX_JOBS=$NIX_BUILD_CORES` after preConfigure, and
  # setup.py hands MAX_JOBS to CMake (ninjaFlags is never read): the cap must come last.
  maxJobsCap = maxJobs:
    assert builtins.isInt maxJobs && maxJobs > 0;
    ''
      export MAX_JOBS=$(( NIX_BUILD_CORES < ${toString maxJobs} ? NIX_BUILD_CORES : ${toString maxJobs} ))
      export CMAKE_BUILD_PARALLEL_LEVEL=$MAX_JOBS
    '';
}
