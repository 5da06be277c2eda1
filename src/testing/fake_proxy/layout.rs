//! The server of a message layout, made of the layout's table (see
//! `src/adapter/layout.rs`): it reads each request field by the field
//! kind the client writes it with, calls the backend, and writes the
//! answer fields the client reads. A table's `by hand` entry is served by
//! the server's own method of that name (`(op, body)`), an `absent` one
//! answers [`not_in_layout`](super::routing::not_in_layout).

/// Implements `WireServer` for `$server` (which holds the group's backend
/// as `api`) from a layout's table: `numbered_volume!(wire_server
/// NumberedVolume: VolumeOperation)`.
macro_rules! wire_server {
    ($server:ident: $group:ident {
        $(#[$doc:meta])*
        $layout:ident: $api:ident in $($wire:ident)::+;
        $($entries:tt)*
    }) => {
        // The names the arms and the method share are made here, once:
        // each step of the macro would make its own.
        super::layout::wire_server!(
            @arms [self op body api $server $group] [$($wire)::+] [] $($entries)*
        );
    };
    (@arms [$this:ident $op:ident $body:ident $api:ident $server:ident $group:ident]
        $wire:tt [$($done:tt)*]
    ) => {
        #[async_trait::async_trait]
        impl super::routing::WireServer<$crate::capability::$group> for $server {
            #[allow(unused_parens, unused_variables)]
            async fn handle(
                &$this,
                $op: $crate::capability::$group,
                $body: &[u8],
            ) -> super::codec::Answer {
                #[allow(unused_imports)]
                use $crate::adapter::fields::{AnswerField, LegacyError, RequestField};
                let $api = &$this.api;
                match $op {
                    $($done)*
                }
            }
        }
    };
    (@arms [$this:ident $op:ident $body:ident $api:ident $server:ident $group:ident]
        $wire:tt [$($done:tt)*]
        fn $m:ident($($arg:ident: $ty:ty),* $(,)?) -> $answer_type:ty = absent $absent:ident;
        $($rest:tt)*
    ) => {
        super::layout::wire_server!(
            @arms [$this $op $body $api $server $group] $wire [$($done)*
                $crate::capability::$group::$absent => {
                    Err(super::routing::not_in_layout($op))
                }
            ] $($rest)*
        );
    };
    (@arms [$this:ident $op:ident $body:ident $api:ident $server:ident $group:ident]
        $wire:tt [$($done:tt)*]
        fn $m:ident($($arg:ident: $ty:ty),* $(,)?) -> $answer_type:ty
            = by hand $hand:ident: $($served:ident)|+;
        $($rest:tt)*
    ) => {
        super::layout::wire_server!(
            @arms [$this $op $body $api $server $group] $wire [$($done)*
                $($crate::capability::$group::$served)|+ => $this.$hand($op, $body).await,
            ] $($rest)*
        );
    };
    (@arms [$this:ident $op:ident $body:ident $api:ident $server:ident $group:ident]
        [$($wire:ident)::+] [$($done:tt)*]
        fn $m:ident($($arg:ident: $ty:ty),* $(,)?) -> $answer_type:ty
            = $mapped:ident: $request:ident {
                $($field:ident: $value:ident as $kind:ty),* $(,)?
                $(; $($client_field:ident: $client_value:expr),+ $(,)?)?
            }
            -> $response:ident { $($answer_field:ident: $answer_kind:ty),* $(,)? }
            $(with legacy $legacy:ident)?
            => $answer:tt;
        $($rest:tt)*
    ) => {
        super::layout::wire_server!(
            @arms [$this $op $body $api $server $group] [$($wire)::+] [$($done)*
                $crate::capability::$group::$mapped => {
                    let request: $($wire)::+::$request = super::codec::decode($body)?;
                    $(let $value = <$kind as RequestField>::from_request(request.$field)?;)*
                    $(let $value = <$kind as RequestField>::lend(&$value);)*
                    let $answer = super::codec::host!($api.$m($($arg),*));
                    super::codec::reply($($wire)::+::$response {
                        $($answer_field: <$answer_kind as AnswerField>::to_answer($answer_field),)*
                        $($legacy: <LegacyError as AnswerField>::to_answer(()),)?
                    })
                }
            ] $($rest)*
        );
    };
}
pub(super) use wire_server;
