# Shell snippets the builders share. Every value from the catalog reaches the shell through
# lib.escapeShellArg, and names that become shell variable names are checked first.
lib:
rec {
  q = lib.escapeShellArg;

  # The pin's package, if it is the version the catalog names. A version the pin does not
  # ship (and no `sources` override brings) would otherwise build the pin's own version under
  # the catalog's name, found only by the smoke test hours later; evaluation stops instead.
  checkVersion =
    {
      pname,
      package, # the catalog's package name: "pytorch"
      version, # the catalog's version of it: "2.8.0"
      pythonPackages,
      attribute,
      drv, # pkgs.${pythonPackages}.${attribute}, after the catalog's source overrides
    }:
    if drv.version == version then
      drv
    else
      throw (
        "ci-tools: ${pname}: catalog.yaml says ${package} ${version}, but the pinned nixpkgs' "
        + "${pythonPackages}.${attribute} is ${drv.version}. Add `sources.${package}` with "
        + "version ${version} and its hash to the branch (or set versions.${package} to "
        + "${drv.version}), then run `ci-tools generate`."
      );

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
