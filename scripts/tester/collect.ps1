# rvgpu: gathers what the runbook (docs/test-machine.md, "10. What to send back") asks for after
# a run or a crash into one archive beside this script, rvgpu-collect-<computer>-<time>.zip.
# In the elevated PowerShell, in the tester's folder:
#   powershell -ExecutionPolicy Bypass -File .\collect.ps1            (add -MemoryDump for
#                                                                       C:\Windows\MEMORY.DMP)
# It changes nothing on the machine. A file that is not there is noted in collect-log.txt.
param([switch]$MemoryDump)

$ErrorActionPreference = 'Continue'
$here = $PSScriptRoot
$stamp = Get-Date -Format 'yyyyMMdd-HHmmss'
$name = "rvgpu-collect-$env:COMPUTERNAME-$stamp"
$work = Join-Path $env:TEMP $name
New-Item -ItemType Directory -Path $work -Force | Out-Null
$log = Join-Path $work 'collect-log.txt'

function Note([string]$text) { $text | Out-File -FilePath $log -Append -Encoding utf8 }

# A command's output (both streams) into a text file of the archive.
function Run([string]$file, [scriptblock]$command) {
    Note "$file <- $command"
    & $command 2>&1 | Out-File -FilePath (Join-Path $work $file) -Encoding utf8
}

# Files into the archive, or a note that there were none.
function Take([string]$from, [string]$to) {
    if (Test-Path $from) {
        $dest = Join-Path $work $to
        New-Item -ItemType Directory -Path $dest -Force | Out-Null
        Copy-Item -Path $from -Destination $dest -Recurse -Force
        Note "$to <- $from"
    } else {
        Note "absent: $from"
    }
}

# The machine and the boot entry.
Run 'ver.txt' { cmd /c ver }
Run 'bcdedit-current.txt' { bcdedit /enum '{current}' }
Run 'verifier-querysettings.txt' { verifier /querysettings }
Run 'manage-bde-status.txt' { manage-bde -status C: }

# The device and the driver store.
Run 'pnputil-device.txt' { pnputil /enum-devices /deviceid 'PCI\VEN_1234&DEV_5256' /drivers }
Run 'pnputil-drivers.txt' { pnputil /enum-drivers /class Display }

# The registry values the runbook sets, and what the install wrote.
Run 'reg-export.txt' {
    reg export 'HKLM\SYSTEM\CurrentControlSet\Control\GraphicsDrivers' (Join-Path $work 'graphicsdrivers.reg') /y
    reg export 'HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Debug Print Filter' (Join-Path $work 'debug-print-filter.reg') /y
    reg export 'HKLM\SYSTEM\CurrentControlSet\Services\rvgpu' (Join-Path $work 'service-rvgpu.reg') /y
    reg export 'HKLM\SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}' (Join-Path $work 'display-class.reg') /y
}

# The event logs.
Run 'wevtutil.txt' {
    wevtutil epl System (Join-Path $work 'System.evtx')
    wevtutil epl Microsoft-Windows-CodeIntegrity/Operational (Join-Path $work 'CodeIntegrity.evtx')
}
Take 'C:\Windows\INF\setupapi.dev.log' 'inf'

# Dumps: the minidumps of bug checks, the live dumps of TDRs (WATCHDOG) and others.
Take 'C:\Windows\Minidump\*.dmp' 'Minidump'
Take 'C:\Windows\LiveKernelReports\*' 'LiveKernelReports'
if ($MemoryDump) { Take 'C:\Windows\MEMORY.DMP' 'MEMORY' }

# What the runbook's harness run wrote in this folder: the ETW trace, the harness's JUnit file,
# timeline and console output.
foreach ($f in 'rvgpu.etl', 'rvgpu-results.xml', 'rvgpu-timeline.json', 'rvgpu-whlk.txt') {
    Take (Join-Path $here $f) 'run'
}

# Compress-Archive of Windows PowerShell 5.1 refuses files of 2 GB and more (a MEMORY.DMP can
# be): then the folder stays, to be sent as it is.
$zip = Join-Path $here "$name.zip"
Compress-Archive -Path (Join-Path $work '*') -DestinationPath $zip -Force
if (Test-Path $zip) {
    Remove-Item -Path $work -Recurse -Force
    Write-Output "collect.ps1: $zip"
} else {
    Write-Output "collect.ps1: no archive; send the folder $work"
}
