# frozen_string_literal: true

require "json"
require_relative "chat_ui_app"

# The new Rails 8 app of spec/fixtures/rails8_app (`rails new` with Rails 8.1's
# defaults), copied to a temp dir and run with its own Gemfile: Rails 8 needs Ruby 3.2,
# so it cannot share the gem's Gemfile (Rails 7.2, which Debian 12's Ruby 3.1 runs).
# Besides the server of ChatUiApp it runs Solid Queue's supervisor (`bin/jobs`) and a
# console (script/console.rb) that answers the spec's questions in the app.
class Rails8App < ChatUiApp
  FIXTURE = File.expand_path("../fixtures/rails8_app", __dir__)
  GEMFILE = File.join(FIXTURE, "Gemfile")
  ANSWER_WAIT = 60 # seconds for the console to answer one question

  class << self
    # Why the Rails 8 specs are skipped (nil when they are not).
    def missing_reason
      return @missing_reason if defined?(@missing_reason)

      @missing_reason =
        if Gem::Version.new(RUBY_VERSION) < Gem::Version.new("3.2")
          "Rails 8 needs Ruby >= 3.2, this is #{RUBY_VERSION}: the Rails 8 app spec is SKIPPED"
        elsif !bundle_installed?
          "the Rails 8 app's gems are not installed (bin/setup installs them: " \
            "BUNDLE_GEMFILE=spec/fixtures/rails8_app/Gemfile bundle install): the Rails 8 app spec is SKIPPED"
        end
    end

    # Runs the block with the environment as it was before `bundle exec`: the app's
    # processes set up their own bundle, not this one's.
    def unbundled(&block)
      defined?(Bundler) ? Bundler.with_original_env(&block) : yield
    end

    private

    def bundle_installed?
      unbundled do
        system({ "BUNDLE_GEMFILE" => GEMFILE }, "bundle", "check", out: File::NULL, err: File::NULL)
      end
    end
  end

  def initialize
    super(fixture: FIXTURE, gemfile: GEMFILE)
    # The app's commands use the fixture's Gemfile in place, whose lock names the gem by
    # its path from there.
    FileUtils.rm_f(%w[Gemfile Gemfile.lock].map { |f| File.join(@dir, f) })
  end

  def run(*command, env: {})
    self.class.unbundled { super(*command, env: env) }
  end

  def start_server(up_path: "/chats")
    self.class.unbundled { super(up_path: up_path) }
  end

  # The generated initializer's providers pointed at the spec's FakeProviders (an
  # initializer named to run after config/initializers/llm_failover.rb); every other
  # setting at the gem's defaults.
  def use_fake_providers(primary_url:, backup_url:)
    File.write(File.join(@dir, "config/initializers/llm_failover_fake_providers.rb"), <<~RUBY)
      LlmFailover.configure do |c|
        c.provider :openai, api: :openai, api_key: ENV.fetch("OPENAI_API_KEY"), base_url: #{primary_url.dump}
        c.provider :anthropic, api: :anthropic, api_key: ENV.fetch("ANTHROPIC_API_KEY"), base_url: #{backup_url.dump}
      end
    RUBY
  end

  # Starts Solid Queue's supervisor (`bin/jobs`: a dispatcher and a worker of three
  # threads, config/queue.yml) in a process group of its own.
  def start_jobs
    @jobs_log = File.join(@dir, "log/jobs.out")
    @jobs_pid = self.class.unbundled do
      Process.spawn(@env, RbConfig.ruby, "bin/jobs", chdir: @dir, out: @jobs_log, err: @jobs_log, pgroup: true)
    end
  end

  # What bin/jobs printed, and the lines of log/development.log about jobs.
  def jobs_log
    printed = @jobs_log && File.exist?(@jobs_log) ? File.read(@jobs_log) : ""
    log = File.join(@dir, "log/development.log")
    logged = if File.exist?(log)
               File.foreach(log).grep(/SolidQueue|AnswerJob|llm_failover/)
                   .reject { |line| line.include?("\e[") || line.include?("↳") }.last(40).join # not the SQL
             else
               ""
             end
    printed + logged
  end

  # Evaluates +code+ in the app's console.
  # @return [Object] its value, through JSON
  def console(code)
    @console ||= start_console
    @console.puts(JSON.generate(code))
    line = read_console_line
    raise "the console failed on #{code}: #{line}" unless line.start_with?("=> ")

    JSON.parse(line.delete_prefix("=> "))
  end

  # Stops the supervisor, the console and the server, and removes the app: each of
  # them even when stopping another raised.
  def stop
    stop_process(@jobs_pid, group: true) if @jobs_pid
  ensure
    @jobs_pid = nil
    begin
      @console&.close # IO.popen's close waits for the runner, which ends at the end of its input
    ensure
      @console = nil
      super
    end
  end

  private

  def start_console
    console = self.class.unbundled do
      IO.popen(@env, [RbConfig.ruby, "bin/rails", "runner", "script/console.rb"], "r+",
               chdir: @dir, err: File.join(@dir, "log/console.err"))
    end
    @console = console
    read_console_line(wait: BOOT_WAIT, until_line: "READY")
    console
  end

  def read_console_line(wait: ANSWER_WAIT, until_line: nil)
    deadline = monotonic + wait
    loop do
      left = deadline - monotonic
      raise "the console did not answer within #{wait} s:\n#{File.read(File.join(@dir, 'log/console.err'))}" unless
        left.positive? && @console.wait_readable(left)

      line = @console.gets or raise "the console exited:\n#{File.read(File.join(@dir, 'log/console.err'))}"
      line = line.chomp
      return line if until_line ? line == until_line : line.start_with?("=> ", "!! ")
    end
  end
end
