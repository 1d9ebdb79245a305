# PyTorch 2.10's install step copies cmake/Modules/FindCUDAToolkit.cmake, which 2.10 no longer
# ships and which nixpkgs' postPatch removes for CUDA builds ("file INSTALL cannot find
# .../FindCUDAToolkit.cmake"). An empty file breaks CMake's own CUDA detection, so the stub
# delegates to CMake's module (upstream docs/pytorch-2.10-cuda13-build-notes.md, "Fix 4").
# The file is created before nixpkgs' `rm` so that the rm has something to remove.
final: prev: {
  pythonPackagesExtensions = prev.pythonPackagesExtensions ++ [
    (pyfinal: pyprev: {
      torch = pyprev.torch.overrideAttrs (old: {
        postPatch = ''
          mkdir -p cmake/Modules
          touch cmake/Modules/FindCUDAToolkit.cmake
        ''
        + (old.postPatch or "")
        + ''
          cat > cmake/Modules/FindCUDAToolkit.cmake <<'EOF'
          if(NOT CUDAToolkit_FOUND)
            set(_orig_module_path "''${CMAKE_MODULE_PATH}")
            list(FILTER CMAKE_MODULE_PATH EXCLUDE REGEX "cmake/Modules")
            include(FindCUDAToolkit)
            set(CMAKE_MODULE_PATH "''${_orig_module_path}")
          endif()
          EOF
        '';
      });
    })
  ];
}
