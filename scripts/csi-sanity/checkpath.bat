@echo off
rem csi-sanity's path check command under Wine: directory, not_found or other.
"%CSIPROXYCTL%" %CSIPROXYCTL_ARGS% fs kind "%~1" || exit /b 1
