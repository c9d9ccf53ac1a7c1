# frozen_string_literal: true

require "securerandom"
require "socket"

module LlmFailover
  module Idempotency
    # Who holds a claim on a turn: "HOST PID START MACHINE TOKEN", written in the claim.
    # START is when the process started (clock ticks after boot, from /proc), MACHINE
    # the kernel's boot id and the PID namespace, TOKEN this one claim (two threads of
    # one process hold different claims). "-" stands for what the system does not say.
    #
    # A claim of a process on this machine (the same MACHINE) is dead as soon as that
    # process is: no process has its PID any more, or another one does (a START that
    # differs), or it is a zombie. Of any other claim nothing can be told from here:
    # its heartbeat decides (Heartbeat::STALE).
    #
    # @api private: used by Idempotency
    module Owner
      LOCK = Mutex.new
      private_constant :LOCK

      module_function

      # @return [String] a new claim's name, this process's (a forked child has its own)
      def claim_name
        "#{process_name} #{SecureRandom.hex(4)}"
      end

      # @param name [String] a claim's name (#claim_name)
      # @return [Boolean] true when it names a process of this machine that has ended
      def dead?(name)
        _host, pid, start, machine = name.to_s.split(" ")
        return false if machine.nil? || machine == "-" || machine != self.machine || !pid.match?(/\A\d+\z/)

        !running?(Integer(pid), start)
      end

      # "HOST PID START MACHINE", computed once per process.
      def process_name
        LOCK.synchronize do
          pid = Process.pid
          unless @pid == pid
            @name = [Socket.gethostname[0, 64], pid, start_of(pid) || "-", machine || "-"].join(" ")
            @pid = pid
          end
          @name
        end
      end

      # The kernel's boot id and this process's PID namespace: two processes that
      # share them see the same PIDs. nil without a /proc that shows this process's
      # own namespace (another system, or a container given the host's /proc).
      def machine
        return @machine if defined?(@machine)

        @machine = begin
          boot = File.read("/proc/sys/kernel/random/boot_id").strip
          namespace = File.readlink("/proc/self/ns/pid")[/\d+/]
          File.read("/proc/self/stat").to_i == Process.pid && namespace ? "#{boot}/#{namespace}" : nil
        rescue SystemCallError, IOError
          nil
        end
      end

      # Whether +pid+ still runs the process that started at +start+. A process whose
      # start cannot be read (another user's under hidepid) counts as running.
      def running?(pid, start)
        Process.kill(0, pid)
        now = start_of(pid, unreadable: start)
        !now.nil? && (start == "-" || now == start)
      rescue Errno::ESRCH
        false
      rescue Errno::EPERM # another user's process: it runs
        true
      end

      # The start time of +pid+ from /proc/PID/stat (its 22nd field, after the
      # command's name in parentheses), nil when it has ended or is a zombie;
      # +unreadable+ when the file cannot be read.
      def start_of(pid, unreadable: nil)
        fields = File.read("/proc/#{pid}/stat").rpartition(")").last.split
        %w[Z X].include?(fields[0]) ? nil : fields[19]
      rescue Errno::ENOENT, Errno::ESRCH
        nil
      rescue SystemCallError, IOError
        unreadable
      end
    end
  end
end
